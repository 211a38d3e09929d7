"""``delib tree`` (build a deliberation-tree store) and ``delib evaluate`` (replay methods over one)."""

from __future__ import annotations

import argparse

from deliberation.cli import flags
from deliberation.cli.common import (DATA_DIR_HELP, add_backend_args, add_data_args, add_engine_args, add_quiet_arg,
                                     cache_path, command_line, out_folder, registry_names, set_data_dir, workload)

TREE_EPILOG = """examples:
  delib tree --benchmark gsm8k --limit 100 --samples 9 --concurrency 3 --out trees/gsm8k   # resumable
  delib tree --benchmark gsm8k --limit 100 --samples 6 --methods mpdf --out trees/mpdf     # round 1: mpdf's nodes only
  delib evaluate --trees trees/gsm8k --method mpdf,agreement-threshold,debate --out runs/replay
  delib evaluate --trees trees/gsm8k --method self-consistency --agents 9 --offline --out runs/sc9"""


def add_parsers(sub: argparse._SubParsersAction) -> None:
    _tree_parser(sub)
    _evaluate_parser(sub)


def _tree_parser(sub: argparse._SubParsersAction) -> None:
    from deliberation.trees.build import TreeSpec

    p = sub.add_parser("tree", help="record round 0 and every action's round-1 outcome per question",
                       description="Builds a tree store: round 0 (with critic), --samples round-0 samples, and "
                       "each agent's REFINE under every update prompt a method uses, so any method replays "
                       "round 1 exactly with `delib evaluate`. Resumable: rerun to continue. --rounds and "
                       "--no-early-stop change nothing recorded (a replay chooses its rounds; later rounds' nodes "
                       "are generated into the store when a replay first needs them).",
                       epilog=TREE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_args(p)
    p.add_argument("--out", required=True, type=out_folder, help="tree store directory")
    add_quiet_arg(p)
    flags.add_flags(p, TreeSpec, only=("samples", "methods"))
    add_backend_args(p)
    add_engine_args(p)
    p.set_defaults(func=cmd_tree, saves_as_it_goes=True)


def _evaluate_parser(sub: argparse._SubParsersAction) -> None:
    from deliberation.runs.replay import Replay

    method_names, _, _ = registry_names()
    p = sub.add_parser("evaluate", help="replay methods over a tree store into run directories",
                       description="Replays each method through the recorded outcomes: the run directories "
                       "equal `delib run`'s on the same questions. Missing nodes (rounds >= 2) are generated "
                       "and recorded, unless --offline.", epilog=TREE_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trees", required=True, help="tree store from `delib tree`")
    p.add_argument("--method", required=True, type=flags.names, metavar="NAME[,NAME]",
                   help="one or more of: " + ", ".join(method_names))
    p.add_argument("--out", required=True, type=out_folder,
                   help="run directory (several methods: one per method inside it)")
    p.add_argument("--data-dir", help=DATA_DIR_HELP)
    add_quiet_arg(p)
    flags.add_flags(p, Replay, skip=("trees", "methods", "command"))
    p.set_defaults(func=cmd_evaluate, saves_as_it_goes=True)


def cmd_tree(args: argparse.Namespace) -> int:
    from deliberation.trees.build import TreeSpec, build

    set_data_dir(args)
    spec = TreeSpec(**workload(args, cache=cache_path(args, args.out)), samples=args.samples, methods=args.methods)
    print(f"{build(spec, args.out, progress=not args.quiet)} questions built in {args.out}")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from deliberation.report.columns import method_column
    from deliberation.runs.replay import Replay, evaluate

    set_data_dir(args)
    replay = Replay(trees=args.trees, methods=args.method, command=command_line(args),
                    **flags.values(args, Replay, skip=("trees", "methods", "command")))
    for s in evaluate(replay, args.out, data_dir=args.data_dir, progress=not args.quiet):
        lo, hi = s.accuracy_ci95
        print(f"{method_column(s.method)}{s.benchmark}/{s.split}: accuracy {s.accuracy:.3f} [{lo:.3f}, {hi:.3f}] "
              f"n={s.n}, {s.tokens_per_question:.0f} tokens/question{s.notes}")
    print(f"-> {args.out}")
    return 0
