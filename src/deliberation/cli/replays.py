"""The commands that replay tree stores under one set of replay settings (``ReplaySettings``): ``delib
tune-rules`` (the best fixed rule on training trees), ``delib tune-votes`` (CISC's vote temperature on training
trees) and ``delib compare`` (learned policies against the best rule, the constants and the oracle, at the team
level, on held-out trees)."""

from __future__ import annotations

import argparse
from typing import Any

from deliberation.cli import flags
from deliberation.cli.common import DATA_DIR_HELP, add_quiet_arg, command_line, out_folder, set_data_dir

EPILOG = """examples:
  delib tune-rules --trees trees/gsm8k-train,trees/math-train --out runs/tuning   # -> runs/tuning/best_rule.json
  delib tune-votes --trees trees/gsm8k-train,trees/math-train --out runs/votes    # -> vote_temperatures.json
  delib compare --trees trees/gsm8k-test,trees/math-test --policy default,runs/rl/policy.pt \\
                --sft runs/sft/policy.pt --rule runs/tuning/best_rule.json --out runs/compare
Nodes the stores lack (round 2) are generated with the store's backend and recorded, unless --offline."""


def add_parsers(sub: argparse._SubParsersAction) -> None:
    _tune_parser(sub)
    _votes_parser(sub)
    _compare_parser(sub)


def _common(p: argparse.ArgumentParser, cls: type) -> None:
    p.add_argument("--trees", required=True, type=flags.names, metavar="STORE[,STORE]",
                   help="tree stores from `delib tree`, pooled")
    p.add_argument("--out", required=True, type=out_folder,
                   help="folder of the run directories (one per store and row)")
    p.add_argument("--data-dir", help=DATA_DIR_HELP)
    add_quiet_arg(p)
    flags.add_flags(p, cls, only=("rounds", "offline", "questions", "ids"))


def _tune_parser(sub: argparse._SubParsersAction) -> None:
    from deliberation.runs.tune_rules import Tuning

    p = sub.add_parser("tune-rules", help="pick the best fixed rule on training trees (best_rule.json)",
                       description="Replays a grid of fixed rules (by default the pre-registered one of the action "
                       "set, the rules reading the critic at t in 0.3..0.95; --grid for others) over the stores "
                       "and picks the best by pooled accuracy, then fewer tokens, then the simpler rule.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(p, Tuning)
    flags.add_flags(p, Tuning, only=("actions", "grid", "allow_test"))
    p.set_defaults(func=cmd_tune_rules, saves_as_it_goes=True)


def _votes_parser(sub: argparse._SubParsersAction) -> None:
    from deliberation.runs.tune_votes import TEMPERATURES, VoteTuning

    p = sub.add_parser("tune-votes", help="tune CISC's vote temperature on training trees (vote_temperatures.json)",
                       description="Replays each confidence-weighted vote (cisc, cisc-logprob) over the stores at "
                       f"T in {', '.join(map(str, TEMPERATURES))} and picks, per method, the T of the highest pooled "
                       "accuracy, then the higher T; pass the file to experiments/sampling_replays.sh (VOTES) or a "
                       "method's T to --vote-temperature. The votes read round 0 only, so --rounds and --offline "
                       "change nothing here (every node they read is in a store).",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(p, VoteTuning)
    flags.add_flags(p, VoteTuning, only=("agents", "allow_test"))
    p.set_defaults(func=cmd_tune_votes, saves_as_it_goes=True)


def _compare_parser(sub: argparse._SubParsersAction) -> None:
    from deliberation.report.compare import Comparison

    p = sub.add_parser("compare", help="learned policies against the tuned best rule on held-out trees",
                       description="Replays the learned policies, the SFT checkpoint, the best rule, the constant "
                       "rules and the oracle over held-out stores; writes team.md, team.json and team.png "
                       "(accuracy, tokens per question, and the paired difference to the best rule). Stores "
                       "sharing a question with those the rule was tuned on, or with those a checkpoint trained on "
                       "(its split.json), are refused.", epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(p, Comparison)
    p.add_argument("--policy", required=True, type=flags.names, metavar="CKPT[,CKPT]",
                   help="learned mpdf checkpoints (paths or shipped names), one row each")
    p.add_argument("--sft", help="the SFT checkpoint, a row of its own")
    p.add_argument("--rule", required=True, help="best_rule.json from `delib tune-rules` on training trees")
    flags.add_flags(p, Comparison, only=("arms",))
    p.set_defaults(func=cmd_compare, saves_as_it_goes=True)


def _settings(cls: type, args: argparse.Namespace, **more: Any) -> Any:
    """The ``StoreSettings`` record ``cls`` from the flags every command here shares, and ``more``."""
    return cls(trees=args.trees, rounds=args.rounds, offline=args.offline, questions=args.questions, ids=args.ids,
               command=command_line(args), **more)


def cmd_tune_rules(args: argparse.Namespace) -> int:
    from deliberation.runs.tune_rules import Tuning, grid_table, tune

    set_data_dir(args)
    tuning = _settings(Tuning, args, actions=args.actions, grid=args.grid, allow_test=args.allow_test)
    chosen, rows = tune(tuning, args.out, data_dir=args.data_dir, progress=not args.quiet)
    print(grid_table(chosen, rows), end="")
    print(f"best: {chosen.label} (accuracy {chosen.accuracy:.3f}, {chosen.tokens_per_question:.0f} tokens/question, "
          f"n={chosen.n}) -> {args.out}/best_rule.json")
    return 0


def cmd_tune_votes(args: argparse.Namespace) -> int:
    from deliberation.runs.tune_votes import VOTES, VoteTuning, grid_table, tune

    set_data_dir(args)
    tuning = _settings(VoteTuning, args, agents=args.agents, allow_test=args.allow_test)
    chosen, rows = tune(tuning, args.out, data_dir=args.data_dir, progress=not args.quiet)
    print(grid_table(chosen, rows), end="")
    print(", ".join(f"{m}: T={r.temperature:g} (accuracy {r.accuracy:.3f}, n={r.n})" for m, r in chosen.items()) +
          f" -> {args.out}/{VOTES}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from deliberation.report.compare import TEAM_MD, Comparison, compare_team

    set_data_dir(args)
    cmp = _settings(Comparison, args, rule=args.rule, policies=args.policy, sft=args.sft, arms=args.arms)
    compare_team(cmp, args.out, data_dir=args.data_dir, progress=not args.quiet)
    print(f"-> {args.out}/{TEAM_MD}")
    return 0
