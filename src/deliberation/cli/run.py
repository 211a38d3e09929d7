"""``delib run``, ``delib experiment`` and ``delib report``: evaluating methods and reporting on them."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from deliberation.cli import flags
from deliberation.errors import DelibError
from deliberation.cli.common import (add_backend_args, add_data_args, add_engine_args, add_quiet_arg, add_ray_args,
                                     add_team_arg, cache_path, engine_config, note_pinned, out_folder, positive,
                                     registry_names, run_backend, set_data_dir, workload)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    _run_parser(sub)
    _experiment_parser(sub)
    _report_parser(sub)


EPILOG_RUN = """examples:
  delib run --method mpdf --benchmark gsm8k --limit 20 --out runs/mpdf-gsm8k
  delib run --method debate --benchmark math --backend openai --model Qwen/Qwen2.5-7B-Instruct \\
            --base-url http://localhost:8000/v1 --out runs/debate-math
  delib run --method self-consistency --backend scripted --limit 30 --out /tmp/sc   # plumbing only
  delib run --method mpdf --benchmark data/mine.jsonl --answer-type numeric --out runs/mine
  delib run --method mpdf --subset 50 --subset-seed 1 --out runs/subset   # 50 random test questions
  delib run --method mpdf --team qwen2.5-coder-1.5b,qwen2.5-coder-0.5b,qwen2.5-coder-1.5b --out runs/mixed
  delib run --method mpdf-allocate --agents 12 --stop-at 0.99 --out runs/allocate   # at most 12 samples
A rerun into the same --out skips finished examples."""


def _run_parser(sub: argparse._SubParsersAction) -> None:
    method_names, _, _ = registry_names()
    from deliberation.methods import described

    p = sub.add_parser("run", help="run one method on one benchmark split",
                       epilog=f"methods:\n{described()}\n\n{EPILOG_RUN}",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Run a method on a benchmark; writes config.json, episodes.jsonl, summary.json.")
    p.add_argument("--method", required=True, help="one of: " + ", ".join(method_names))
    add_data_args(p)
    p.add_argument("--out", required=True, type=out_folder, help="run directory")
    add_method_options(p)
    add_quiet_arg(p)
    add_backend_args(p)
    add_engine_args(p)
    add_team_arg(p)
    add_ray_args(p)
    p.set_defaults(func=cmd_run, saves_as_it_goes=True)


def _experiment_parser(sub: argparse._SubParsersAction) -> None:
    from deliberation.runs.plan import DEFAULT_THROUGHPUT

    p = sub.add_parser(
        "experiment", help="run a grid of methods x benchmarks x seeds from a TOML file",
        description="Every cell is a resumable run directory under the file's `out` (default runs/<name>); all "
        "cells share one response cache (<out>/responses.sqlite), so round-0 answers are generated once, "
        "and one backend (with --workers > 1, each Ray actor builds its own over the same cache file). Ends "
        "with the report table in <out>/report.",
        epilog="examples:\n  delib experiment experiments/quick.toml\n  delib experiment experiments/table1.toml\n"
        "  delib experiment experiments/table1.toml --limit 10   # 10 questions per cell first\n"
        "  delib experiment experiments/table1.toml --benchmarks mmlu,gsm8k   # only these, in this order\n"
        "  delib experiment experiments/table1.toml --methods mpdf,debate   # these two rows to the file's limits\n"
        "  delib experiment experiments/paper.toml --plan --throughput 2500   # cells, calls, tokens, hours\n"
        "  DELIB_BASE_URL=http://127.0.0.1:8000/v1 delib experiment experiments/paper.toml --backbones qwen2.5-7b",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", help="experiment TOML (see experiments/)")
    p.add_argument("--limit", type=positive, metavar="N",
                   help="at most N questions per benchmark (a first, smaller table; rerun without it to extend)")
    p.add_argument("--benchmarks", type=flags.names, metavar="NAME,NAME",
                   help="only these benchmarks of the file, in this order (the same cells as a full run)")
    p.add_argument("--methods", type=flags.names, metavar="LABEL,LABEL",
                   help="only these methods or variant labels of the file, in this order (the same cells)")
    p.add_argument("--backbones", type=flags.names, metavar="LABEL,LABEL",
                   help="only these [[backbones]] of the file, in this order (the same cells): one model's server "
                   "at a time")
    p.add_argument("--plan", action="store_true",
                   help="print the cells and their expected LLM calls, generated tokens and hours, and exit; nothing "
                   "runs and no server is asked")
    p.add_argument("--throughput", type=throughput, metavar="TOKENS_PER_S",
                   help="--plan: generated tokens per second over all requests in flight (default "
                   f"{DEFAULT_THROUGHPUT:g}, an assumption for one GPU serving a 3B-8B model with vLLM)")
    p.add_argument("--answer-tokens", type=positive, metavar="N",
                   help="--plan: tokens one answer call generates, on every benchmark (default: per benchmark, the "
                   "mean of committed runs, runs/plan.ANSWER_TOKENS)")
    add_quiet_arg(p)
    add_ray_args(p)
    p.set_defaults(func=cmd_experiment, saves_as_it_goes=True)


def throughput(text: str) -> float:
    """--throughput: a finite number of generated tokens per second above 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be generated tokens per second above 0, got {text!r}")
    return value


def _report_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="markdown/CSV tables and PNG plots from run and training directories",
                       description="Finds run directories (summary.json / episodes.jsonl) and training "
                       "directories (metrics.jsonl) under the paths given.")
    p.add_argument("dirs", nargs="+", help="run, experiment or training directories")
    p.add_argument("--out", required=True, type=out_folder, help="where report.md, report.csv, paired.json (the "
                   "rows paired with --reference) and the PNGs go; with --trees also self-consistency-replays/")
    p.add_argument("--reference", metavar="LABEL", help="row every other row is compared with question by "
                   "question (default: the best fixed rule present)")
    p.add_argument("--trees", help="tree store the runs were replayed from: replay self-consistency at every k "
                   "its round-0 samples allow, to pair each row with self-consistency at its own token budget "
                   "(without it, the self-consistency runs among the directories serve, once two k are there)")
    p.set_defaults(func=cmd_report)


def add_method_options(p: argparse.ArgumentParser) -> None:
    """A flag per method option, from ``MethodOptions`` (refused for methods that do not read it)."""
    from deliberation.methods.options import MethodOptions

    flags.add_flags(p, MethodOptions)


def method_options(args: argparse.Namespace) -> dict[str, object]:
    """The method options the parsed ``args`` hold, by name."""
    from deliberation.methods.options import MethodOptions

    return flags.values(args, MethodOptions)


def cmd_run(args: argparse.Namespace) -> int:
    from deliberation.runs.runner import RunSpec, execute

    set_data_dir(args)
    backend, options = run_backend(args)
    engine = engine_config(args)
    note_pinned(args, args.method, engine)
    spec = RunSpec(method=args.method, **workload(args, backend=backend, backend_options=options,
                                                  cache=cache_path(args, args.out), engine=engine),
                   **method_options(args))
    if args.workers > 1 or args.ray_address:
        from deliberation.runs.distributed import execute_distributed

        s = execute_distributed(spec, args.out, args.workers, args.ray_address, progress=not args.quiet)
    else:
        s = execute(spec, args.out, progress=not args.quiet)
    lo, hi = s.accuracy_ci95
    print(f"{s.method} on {s.benchmark}/{s.split}: accuracy {s.accuracy:.3f} [{lo:.3f}, {hi:.3f}] n={s.n}, "
          f"{s.tokens_per_question:.0f} tokens/question ({s.completion_tokens_per_question:.0f} generated), "
          f"{s.llm_calls_per_question:.1f} calls/question{s.notes} -> {args.out}")
    return 0


def cmd_experiment(args: argparse.Namespace) -> int:
    from deliberation.report.write import write_report
    from deliberation.runs import experiment
    from deliberation.runs.api import experiment_config

    cfg = experiment_config(args.config, args.limit, args.benchmarks, args.methods, args.backbones)
    if args.plan:
        return _print_plan(cfg, args)
    if args.throughput is not None or args.answer_tokens is not None:
        raise DelibError("--throughput and --answer-tokens size a --plan; add --plan, or drop them to run")
    summaries = experiment.run_experiment(cfg, progress=not args.quiet, workers=args.workers, report=write_report,
                                          ray_address=args.ray_address, notify=print)
    for cell, s in zip(experiment.plan(cfg), summaries):  # every cell ran: failures raise above
        print(f"{cell.backbone + ' ' if cell.backbone else ''}{cell.label:<22}{s.benchmark:<10} accuracy "
              f"{s.accuracy:.3f} n={s.n} {s.tokens_per_question:.0f} tok/q")
    print(f"report: {Path(cfg.out) / 'report'}")
    return 0


def _print_plan(cfg, args: argparse.Namespace) -> int:
    """``--plan``: the grid's cells and cost (runs/plan.py); nothing runs."""
    from deliberation.runs import plan

    estimate = plan.estimate(cfg, args.throughput or plan.DEFAULT_THROUGHPUT, args.answer_tokens)
    print("\n".join(plan.lines(estimate, args.config)))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from deliberation.report.write import write_report

    for path in write_report(args.dirs, args.out, args.reference, args.trees):
        print(path)
    return 0
