"""The training subcommands of ``delib``: ``collect``, ``train`` and ``iterate`` (collect, train, repeat).

Collection flags come from ``CollectSpec``'s fields and training flags from ``TrainConfig``'s (cli/flags.py):
a training flag left out keeps TrainConfig's default.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from deliberation.cli import flags
from deliberation.cli.common import (CACHE_HELP, add_backend_args, add_engine_args, add_quiet_arg, add_selection_args,
                                     cache_path, out_folder, positive, registry_names, selection, set_data_dir,
                                     workload)

if TYPE_CHECKING:
    from deliberation.config import Selection
    from deliberation.rl.config import TrainConfig

COLLECT_OPTIONS = ("joint_actions", "epsilon", "allow_test")
TRAIN_SKIP = ("algo", "seed")  # --algo is its own flag; the seed is --seed (train) or --train-seed (iterate)
ALGO_HELP = "one of %(choices)s (default %(default)s)"  # registry views, read (loading torch) when shown or checked

ITERATE_EPILOG = """example (two iterations on 100 GSM8K and 100 MATH train questions):
  delib iterate --benchmark gsm8k math --limit 100 --iterations 2 --model qwen2.5-coder-0.5b \\
                --concurrency 3 --out runs/iterate
Rerun the same command to resume; each iteration's policy is iter-<i>/policy/policy.pt."""


def add_parsers(sub: argparse._SubParsersAction) -> None:
    _collect_parser(sub)
    _train_parser(sub)
    _iterate_parser(sub)


ITERATE_CACHE_HELP = ("SQLite response cache (default: <out>/responses.sqlite, shared by all iterations; "
                      "'none' disables)")


def _collection_args(p: argparse.ArgumentParser, cache_help: str = CACHE_HELP) -> None:
    """What to collect and how: shared by collect and iterate."""
    from deliberation.rl.collect import CollectSpec

    p.add_argument("--split", default="train", help="split (default train; test is refused without --allow-test)")
    p.add_argument("--limit", type=positive, help="first N questions only")
    flags.add_flags(p, CollectSpec, only=COLLECT_OPTIONS)
    add_quiet_arg(p)
    add_backend_args(p, cache_help)
    add_engine_args(p)


def _collect_parser(sub: argparse._SubParsersAction) -> None:
    _, bench_names, _ = registry_names()
    p = sub.add_parser(
        "collect", help="collect training rollouts (counterfactual rewards of every action)",
        description="Run episodes with a behaviour policy and record, per decision, the features, the action, "
        "its log-prob and the reward of each of PERSIST/REFINE/CONCEDE. Resumable: rerun to continue.",
        epilog="examples:\n  delib collect --benchmark gsm8k --split train --limit 150 --out data/rollouts/gsm8k\n"
        "  delib collect --benchmark gsm8k --split train --offset 1000 --limit 50 --out data/rollouts/more",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--benchmark", default="gsm8k", help=", ".join(bench_names) + " (default gsm8k)")
    p.add_argument("--policy", help="behaviour policy checkpoint (default: the agreement-threshold rule)")
    p.add_argument("--out", required=True, type=out_folder, help="rollout directory")
    _collection_args(p)
    add_selection_args(p)
    p.set_defaults(func=cmd_collect, saves_as_it_goes=True)


def _train_parser(sub: argparse._SubParsersAction) -> None:
    from deliberation.rl.algorithms import ALGORITHMS

    p = sub.add_parser(
        "train", help="train a meta-policy on rollouts (sft, softrankpo, grpo, ...)",
        description="Stage 1 (sft): cross-entropy on oracle labels (the best counterfactual action). Stage 2: "
        "a policy gradient from the SFT policy, KL-regularized to it. Without --init, a policy-gradient algo "
        "trains the SFT stage first. Writes policy.pt, config.json, metrics.jsonl, held_out.json (the policy "
        "against the constant policies on held-out questions) and split.json (the question ids trained on and "
        "held out) into --out.",
        epilog="examples:\n  delib train --algo sft --rollouts data/rollouts/gsm8k data/rollouts/math --out ckpt/sft\n"
        "  delib train --algo softrankpo --rollouts data/rollouts/* --init ckpt/sft/policy.pt --out ckpt/srpo",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--algo", default="softrankpo", choices=ALGORITHMS, metavar="ALGO", help=ALGO_HELP)
    p.add_argument("--rollouts", nargs="+", default=[], help="rollout directories from `delib collect`")
    p.add_argument("--trees", nargs="+", default=[], help="tree stores from `delib tree`: their decisions under the "
                   "collector's default behaviour policy, derived without LLM calls")
    p.add_argument("--tree-rounds", type=positive, help="rounds of the --trees episodes (default: 1, or 2 with "
                   "--reward episode); rounds after 1 need --grow-trees once")
    p.add_argument("--grow-trees", action="store_true", help="let each --trees store's own backend generate the "
                   "later-round nodes it lacks, recorded in the store (LLM calls; default: offline)")
    p.add_argument("--allow-test", action="store_true", help="train on --trees stores of test questions, which the "
                   "policy is then measured on (refused without it)")
    p.add_argument("--init", help="start (and KL reference) policy for the policy-gradient stage: a policy.pt or the "
                   "training directory holding it")
    p.add_argument("--out", required=True, type=out_folder, help="output directory (must not exist or be empty)")
    _training_args(p)
    p.set_defaults(func=cmd_train)


def _iterate_parser(sub: argparse._SubParsersAction) -> None:
    from deliberation.rl.algorithms import POLICY_GRADIENT
    from deliberation.rl.pipeline import ROLLOUTS_HOLD

    _, bench_names, _ = registry_names()
    p = sub.add_parser(
        "iterate", help="collect with the current policy, train, repeat",
        description="Iteration i collects on every --benchmark with iteration i-1's policy (epsilon-mixed; the "
        "first uses --policy or the agreement-threshold rule) and engine seed --seed + i, then trains from that "
        "policy on the new rollouts (the first trains SFT first when it has no --policy).",
        epilog=ITERATE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--benchmark", nargs="+", default=["gsm8k"], help=", ".join(bench_names) + " (default gsm8k)")
    p.add_argument("--iterations", type=positive, required=True, help="collect-train rounds")
    p.add_argument("--policy", help="behaviour policy of the first iteration, a checkpoint path or a shipped name "
                   "(default: agreement-threshold)")
    p.add_argument("--algo", default="softrankpo", choices=POLICY_GRADIENT, metavar="ALGO", help=ALGO_HELP)
    p.add_argument("--out", required=True, type=out_folder, help="iterations directory (rerun to resume)")
    _collection_args(p, ITERATE_CACHE_HELP)
    _training_args(p, seed_flag="--train-seed", hidden=tuple(ROLLOUTS_HOLD))
    p.set_defaults(func=cmd_iterate, saves_as_it_goes=True)


def _training_args(p: argparse.ArgumentParser, seed_flag: str = "--seed", hidden: tuple[str, ...] = ()) -> None:
    """TrainConfig overrides (``hidden``: accepted, not shown in --help); ``iterate`` names the training seed
    --train-seed (--seed is the engine's)."""
    from deliberation.rl.config import TrainConfig

    flags.add_flags(p, TrainConfig, skip=TRAIN_SKIP, suppress=True, hidden=hidden)
    seed = flags.field_docs(TrainConfig)["seed"]
    p.add_argument(seed_flag, dest="train_seed", type=int, default=argparse.SUPPRESS, metavar="N",
                   help=f"{seed} (default {TrainConfig.seed})")


def _train_config(args: argparse.Namespace) -> TrainConfig:
    """The training settings: --algo and the TrainConfig fields given on the command line, TrainConfig's
    defaults for the others (``--clip-eps none`` gives clip_eps None)."""
    from deliberation.rl.config import TrainConfig

    values = flags.values(args, TrainConfig, skip=TRAIN_SKIP)
    if hasattr(args, "train_seed"):
        values["seed"] = args.train_seed
    return TrainConfig(algo=args.algo, **values)


def _collect_spec(args: argparse.Namespace, benchmark: str, cache: str | None, chosen: Selection | None = None):
    """The collection the flags ask for; ``chosen``: the question selection (``delib iterate`` has none, its
    benchmarks share the flags)."""
    from deliberation.config import Selection
    from deliberation.rl.collect import CollectSpec

    set_data_dir(args)
    return CollectSpec(**workload(args, benchmark=benchmark, cache=cache, selection=chosen or Selection()),
                       policy=args.policy, **flags.values(args, CollectSpec, only=COLLECT_OPTIONS))


def cmd_collect(args: argparse.Namespace) -> int:
    from deliberation.rl.collect import collect

    spec = _collect_spec(args, args.benchmark, cache_path(args, args.out), selection(args))
    n = collect(spec, args.out, progress=not args.quiet)
    print(f"{n} questions of rollouts in {args.out}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from deliberation.rl.pipeline import TrainRequest, run_training

    print(run_training(TrainRequest(_train_config(args), tuple(args.rollouts), args.init, args.out,
                                     tuple(args.trees), args.tree_rounds, args.grow_trees, allow_test=args.allow_test)))
    return 0


def cmd_iterate(args: argparse.Namespace) -> int:
    from deliberation.rl.iterate import IterateSpec, iterate

    cache = cache_path(args, str(Path(args.out) / "rollouts"))  # default: <out>/responses.sqlite, all iterations
    spec = IterateSpec(_collect_spec(args, args.benchmark[0], cache), tuple(args.benchmark), args.iterations,
                       _train_config(args))
    last = iterate(spec, args.out, progress=not args.quiet, notify=print)
    print(f"last policy: {last}")
    return 0
