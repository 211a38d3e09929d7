"""The training subcommands of ``delib``: ``collect``, ``train`` and ``iterate`` (collect, train, repeat).

Split from ``cli.py`` to keep files small; ``cli.build_parser`` adds them, ``cli.main`` turns their
DelibErrors into one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from deliberation.cli.main import (CACHE_HELP, _names, _positive, _registry_names, add_backend_args, add_engine_args,
                              backend_options, cache_path, engine_config)

def _clip_eps(text: str) -> float | None:
    return None if text.lower() == "none" else float(text)


TRAIN_FLAGS = (("--epochs", int, "passes over the data"), ("--lr", float, "learning rate"),
               ("--reward-scale", float, "multiplies rewards (robustness ablation)"),
               ("--kl-coef", float, "beta: KL to the reference policy"),
               ("--entropy-coef", float, "entropy bonus weight"),
               ("--tau", float, "SoftRankPO temperature (0 = hard ranks)"),
               ("--group-size", int, "K: rank samples 0..K-1 of each question, the group-size ablation; omit for all"),
               ("--token-cost-coef", float, "reward penalty per token spent (policy gradient only; SFT labels and "
                                   "held-out scores are uncosted)"),
               ("--clip-eps", _clip_eps,
                "PPO ratio clip against the behaviour log-prob, for every algo (rollouts are offline); "
                "'none' = the plain gradient -mean(A log pi), where only ppo still clips"),
               ("--val-fraction", float, "held-out questions"),
               ("--ignore-features", _names,
                "comma-separated features the policy never sees, e.g. confidence (the critic's P(Yes), whose "
                "scale is the collecting model's) for a policy meant for another model"))
"""``delib train`` settings, each overriding ``TrainConfig``'s default only when given (and the seed)."""

ITERATE_EPILOG = """example (two iterations on 100 GSM8K and 100 MATH train questions):
  delib iterate --benchmark gsm8k math --limit 100 --iterations 2 --model qwen2.5-coder-0.5b \\
                --concurrency 3 --out runs/iterate
Rerun the same command to resume; each iteration's policy is iter-<i>/policy/policy.pt."""


def add_training_parsers(sub: argparse._SubParsersAction) -> None:
    _collect_parser(sub)
    _train_parser(sub)
    _iterate_parser(sub)


ITERATE_CACHE_HELP = ("SQLite response cache (default: <out>/responses.sqlite, shared by all iterations; "
                      "'none' disables)")


def _collection_args(p: argparse.ArgumentParser, cache_help: str = CACHE_HELP) -> None:
    """What to collect and how: shared by collect and iterate."""
    p.add_argument("--split", default="train", help="split (default train; test is refused without --allow-test)")
    p.add_argument("--allow-test", action="store_true",
                   help="collect on a test split anyway (benchmarks with no train split; never evaluate on it then)")
    p.add_argument("--limit", type=_positive, help="first N questions only")
    p.add_argument("--samples", type=int, default=8, help="K joint actions per decision point (default 8)")
    p.add_argument("--epsilon", type=float, default=0.2, help="uniform exploration share, above 0 (default 0.2)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_backend_args(p, cache_help)
    add_engine_args(p)


def _collect_parser(sub: argparse._SubParsersAction) -> None:
    _, bench_names, _ = _registry_names()
    p = sub.add_parser(
        "collect", help="collect training rollouts (counterfactual rewards of every action)",
        description="Run episodes with a behaviour policy and record, per decision, the features, the action, "
        "its log-prob and the reward of each of PERSIST/REFINE/CONCEDE. Resumable: rerun to continue.",
        epilog="example:\n  delib collect --benchmark gsm8k --split train --limit 150 --out data/rollouts/gsm8k",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--benchmark", default="gsm8k", help=", ".join(bench_names) + " (default gsm8k)")
    p.add_argument("--policy", help="behaviour policy checkpoint (default: the agreement-threshold rule)")
    p.add_argument("--out", required=True, help="rollout directory")
    _collection_args(p)
    p.set_defaults(func=cmd_collect)


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
    p.add_argument("--algo", default="softrankpo", choices=list(ALGORITHMS), help="default softrankpo")
    p.add_argument("--rollouts", nargs="+", required=True, help="rollout directories from `delib collect`")
    p.add_argument("--init", help="start (and KL reference) policy for the policy-gradient stage")
    p.add_argument("--out", required=True, help="output directory (must not exist or be empty)")
    _training_args(p)
    p.set_defaults(func=cmd_train)


def _iterate_parser(sub: argparse._SubParsersAction) -> None:
    from deliberation.rl.algorithms import POLICY_GRADIENT

    _, bench_names, _ = _registry_names()
    p = sub.add_parser(
        "iterate", help="collect with the current policy, train, repeat",
        description="Iteration i collects on every --benchmark with iteration i-1's policy (epsilon-mixed; the "
        "first uses --policy or the agreement-threshold rule) and engine seed --seed + i, then trains from that "
        "policy on the new rollouts (the first trains SFT first when it has no --policy).",
        epilog=ITERATE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--benchmark", nargs="+", default=["gsm8k"], help=", ".join(bench_names) + " (default gsm8k)")
    p.add_argument("--iterations", type=_positive, required=True, help="collect-train rounds")
    p.add_argument("--policy", help="behaviour policy of the first iteration (default: agreement-threshold)")
    p.add_argument("--algo", default="softrankpo", choices=POLICY_GRADIENT, help="default softrankpo")
    p.add_argument("--out", required=True, help="iterations directory (rerun to resume)")
    _collection_args(p, ITERATE_CACHE_HELP)
    _training_args(p, seed_flag="--train-seed")
    p.set_defaults(func=cmd_iterate)


def _training_args(p: argparse.ArgumentParser, seed_flag: str = "--seed") -> None:
    """TrainConfig overrides; ``iterate`` names the training seed --train-seed (--seed is the engine's)."""
    for flag, kind, text in TRAIN_FLAGS:  # absent: TrainConfig's default, shown in the help
        p.add_argument(flag, type=kind, help=f"{text} ({_default(flag)})", default=argparse.SUPPRESS)
    p.add_argument(seed_flag, dest="train_seed", type=int, default=argparse.SUPPRESS,
                   help=f"training seed: initialization, batch order, held-out split ({_default('--seed')})")


def _default(flag: str) -> str:
    """'default X' of the TrainConfig field behind ``flag``, for the help text."""
    from deliberation.rl.config import TrainConfig

    value = TrainConfig.__dataclass_fields__[flag[2:].replace("-", "_")].default
    return "default: all" if value is None else "default: none" if value == () else f"default {value}"


def _overrides(args: argparse.Namespace) -> dict:
    """The TrainConfig fields given on the command line (``--clip-eps none`` gives clip_eps None)."""
    fields = [flag[2:].replace("-", "_") for flag, _, _ in TRAIN_FLAGS]
    values = {name: getattr(args, name) for name in fields if hasattr(args, name)}
    if hasattr(args, "train_seed"):
        values["seed"] = args.train_seed
    return values


def _collect_spec(args: argparse.Namespace, benchmark: str, cache: str | None):
    from deliberation.rl.collect import CollectSpec

    if args.data_dir:
        os.environ["DELIB_DATA_DIR"] = args.data_dir
    return CollectSpec(benchmark=benchmark, split=args.split, limit=args.limit, backend=args.backend,
                       backend_options=backend_options(args), cache=cache, engine=engine_config(args),
                       samples=args.samples, epsilon=args.epsilon, policy=args.policy,
                       command=shlex.join(["delib", *sys.argv[1:]]), concurrency=args.concurrency,
                       allow_test=args.allow_test)


def cmd_collect(args: argparse.Namespace) -> int:
    from deliberation.rl.collect import collect

    n = collect(_collect_spec(args, args.benchmark, cache_path(args, args.out)), args.out, progress=not args.quiet)
    print(f"{n} questions of rollouts in {args.out}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from deliberation.rl.train_cli import TrainRequest, run_training

    print(run_training(TrainRequest(args.algo, tuple(args.rollouts), args.init, args.out, _overrides(args))))
    return 0


def cmd_iterate(args: argparse.Namespace) -> int:
    from deliberation.rl.iterate import IterateSpec, iterate

    cache = cache_path(args, str(Path(args.out) / "rollouts"))  # default: <out>/responses.sqlite, all iterations
    spec = IterateSpec(_collect_spec(args, args.benchmark[0], cache), tuple(args.benchmark), args.iterations,
                       args.algo, _overrides(args))
    last = iterate(spec, args.out, progress=not args.quiet, notify=print)
    print(f"last policy: {last}")
    return 0
