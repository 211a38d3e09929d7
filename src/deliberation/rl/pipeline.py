"""The ``delib train`` pipeline: rollouts -> (SFT) -> policy gradient -> checkpoint directory.

Everything is validated (rollout feature version, empty files, hyper-parameters) before any file is
written; outputs are staged and renamed by ``write_training_outputs``, so nothing is half-written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from deliberation.engine.features import PAPER
from deliberation.errors import DelibError, read_object
from deliberation.rl.algorithms import ALGORITHMS
from deliberation.rl.config import TrainConfig
from deliberation.rl.held_out_file import HeldOutScores
from deliberation.rl.rewards import REWARDS
from deliberation.rl.rollout_files import load_decisions
from deliberation.policy.split import read_split, split_file, split_of
from deliberation.actions import ACTION_ORDER, PAPER_ACTIONS
from deliberation.trees.manifest import refuse_repeated, refuse_test_store
from deliberation.types import Decision

LOG = logging.getLogger("deliberation")


@dataclass(frozen=True)
class TrainRequest:
    """What the CLI asks for: the training settings (the algorithm among them), the data, an optional start
    policy, where to write."""

    config: TrainConfig
    rollouts: tuple[str, ...]
    init: str | None
    out: str
    trees: tuple[str, ...] = ()
    """Tree stores whose decisions (the collector's behaviour policy, replayed offline) join the data."""
    tree_rounds: int | None = None
    """Rounds the tree stores' episodes run (decisions of rounds 1..N); None: the reward's default
    (``RewardSpec.tree_rounds``: 1 for round, 2 for episode)."""
    grow_trees: bool = False
    """Let the tree stores' own backends generate the later-round nodes they lack (recorded in the store)."""
    allow_test: bool = False
    """Train on tree stores of test questions, which the policy is then measured on: opt-in only."""
    flags: tuple[str, str] = ("--init", "--seed")
    """How the command asking names the start policy and the training seed in its errors (``delib iterate``:
    --policy and --train-seed)."""


def run_training(req: TrainRequest) -> str:
    """Train and write the outputs; returns a one-line summary for the terminal."""
    import torch

    from deliberation.rl.data import first_samples
    from deliberation.rl.trainer import CHECKPOINT_NAME, prepare, train_pg, train_sft, write_training_outputs

    torch.set_num_threads(1)  # measured 5-10x faster than 2 threads on a loaded 2-core machine
    cfg = req.config
    features = cfg.feature_set()
    supervised = ALGORITHMS[cfg.algo].supervised
    if req.init and supervised:
        raise DelibError("--init starts a policy-gradient run from a checkpoint; --algo sft always trains from "
                         "scratch on oracle labels: drop --init or pick another --algo")
    init_file = init_checkpoint(req.init, CHECKPOINT_NAME) if req.init is not None else None
    init = _start(init_file, features, cfg.features, req.flags[0]) if init_file else None  # a checkpoint, first
    if init is not None and (init.hidden, init.heads) != (cfg.hidden, cfg.heads):
        LOG.warning("delib: note: the start policy %s keeps its own network (hidden %d, heads %d); --hidden %d and "
                    "--heads %d size a network trained from scratch", init_file, init.hidden, init.heads, cfg.hidden,
                    cfg.heads)
    decisions = training_decisions(req)
    train, val = prepare(decisions, cfg)  # the trainer holds out the same questions (same seed and fraction)
    split = split_of(train.examples, val.examples)
    if init_file:
        check_init_split(init_file, cfg, split.held_out, req.flags)
    if supervised:
        net, metrics = train_sft(decisions, cfg)
    else:
        sft_metrics = []
        if init is None:
            init, sft_metrics = train_sft(decisions, cfg)
        net, pg_metrics = train_pg(decisions, cfg, init=init, reference=init)
        metrics = [*sft_metrics, *pg_metrics]
    start = None if supervised else init
    scores = _scores(val, net, start)
    out = write_training_outputs(req.out, net, cfg, metrics, features.names, features.version,
                                 split=split, scores=scores)
    return _summary_line(cfg.algo, len(first_samples(decisions, cfg.group_size)), scores, out)


@dataclass(frozen=True)
class HeldByRollouts:
    """A TrainConfig field whose value rollout files fix: the one value they hold, and why."""

    value: str
    why: str


ROLLOUTS_HOLD: dict[str, HeldByRollouts] = {
    "reward": HeldByRollouts(next(name for name in REWARDS if REWARDS[name].in_rollouts),
                             "they hold the round reward"),
    "actions": HeldByRollouts(PAPER_ACTIONS, "they score the paper's three actions"),
    "features": HeldByRollouts(PAPER.name, "they hold the paper's features"),
    "reward_components": HeldByRollouts("both", "they hold r_local + r_global, not each term"),
}
"""What rollout files (``delib collect``, ``delib iterate``) can train: the paper's three actions on its
features, with the round reward summed. ``delib iterate``, which trains on rollouts only, does not offer these
fields' flags (it refuses any other value before collecting)."""


def not_in_rollouts(cfg: TrainConfig) -> tuple[str, str, str] | None:
    """(the flag and value, why, the setting rollouts do hold) of the first setting of ``cfg`` that rollout
    files cannot train, or None."""
    for name, held in ROLLOUTS_HOLD.items():
        if getattr(cfg, name) != held.value:
            flag = "--" + name.replace("_", "-")
            return f"{flag} {getattr(cfg, name)}", held.why, f"{flag} {held.value}"
    return None


def training_decisions(req: TrainRequest) -> list[Decision]:
    """The decisions of the rollout directories and of the tree stores, rewards by the request's reward; a
    question may come from one source only."""
    from deliberation.rl.from_trees import decisions_from_trees

    cfg = req.config
    if not req.rollouts and not req.trees:
        raise DelibError("nothing to train on: pass --rollouts from `delib collect` or --trees from `delib tree`")
    if not req.trees and (req.tree_rounds or req.grow_trees or req.allow_test):
        raise DelibError("--tree-rounds, --grow-trees and --allow-test are about --trees stores; pass --trees or drop "
                         "them")
    for path in req.trees:  # every store, before any grows (--grow-trees writes to it)
        refuse_test_store(path, "a policy trained", req.allow_test)
    beyond = not_in_rollouts(cfg) if req.rollouts else None
    if beyond:
        raise DelibError(f"{beyond[0]} is not in rollout files ({beyond[1]}): derive the decisions from tree "
                         f"stores with --trees instead of --rollouts, or train with {beyond[2]}")
    decisions = load_decisions([Path(p) for p in req.rollouts]) if req.rollouts else []
    seen = {d.example_id for d in decisions}
    rounds = req.tree_rounds or REWARDS[cfg.reward].tree_rounds
    for path in req.trees:
        new = decisions_from_trees(path, rounds=rounds, reward=cfg.reward, grow=req.grow_trees,
                                   components=cfg.reward_components, features=cfg.features, actions=cfg.actions)
        seen = refuse_repeated(seen, (d.example_id for d in new), path, "train on one of them")
        decisions += new
    if not decisions:
        raise DelibError(f"no decisions in {', '.join(req.trees)}: every question agreed at round 0; train on "
                         "stores of more (or harder) questions")
    return decisions


def init_checkpoint(init: str, name: str) -> Path:
    """``--init`` as a checkpoint file: a policy.pt as given, or the one (``name``) inside a training
    directory of ``delib train``."""
    if not init.strip():  # it would read as no --init: a run from scratch nobody asked for
        raise DelibError("--init is empty; name a policy.pt or a training directory, or leave --init out")
    path = Path(init)
    if not path.is_dir():
        return path
    if not (path / name).is_file():
        raise DelibError(f"--init {path} is a directory without a {name}; pass a training directory of `delib "
                         f"train` or a {name}")
    return path / name


def _start(init: Path, features: Any, chosen: str, flag: str) -> Any:
    """The network of the start policy ``init``, refused in one line when it reads other features than the
    run's (``chosen``, the --features name) with the two ways out."""
    from deliberation.policy.checkpoint import FeatureMismatch, load_policy

    try:
        return load_policy(init, features.names, features.version).net
    except FeatureMismatch as err:
        raise DelibError(f"{flag} {init}: {err.mismatch}; start from a policy trained with --features {chosen}, "
                         f"train with the --features it was trained with, or drop {flag}") from err


def check_init_split(init: Path, cfg: TrainConfig, held_out: Sequence[str],
                     flags: tuple[str, str] = ("--init", "--seed")) -> None:
    """Refuse an ``--init`` policy that trained on questions this run holds out. With the start run's
    split.json the check is exact; older runs have only config.json, and holding out by (seed, hash) below
    val_fraction is safe then only with the same seed and a val_fraction no larger. A checkpoint with
    neither beside it (e.g. one shipped in the package without its ``<name>.split.json``) is taken as is.
    ``flags``: how the command names the start policy and the training seed."""
    given, seed_flag = flags
    split = split_file(init)
    if split.exists():
        leaked = sorted(set(held_out) & set(read_split(split).train))
        if leaked:
            raise DelibError(f"{given} {init} trained on {len(leaked)} of this run's held-out questions (e.g. "
                             f"{leaked[0]}), so they would leak into validation; train with the {seed_flag} and "
                             f"--val-fraction it was trained with")
        return
    path = init.parent / "config.json"
    if cfg.val_fraction == 0 or not path.exists():
        return
    trained = read_object(path)
    seed, fraction = trained.get("seed"), trained.get("val_fraction", 0.0)
    if seed != cfg.seed or cfg.val_fraction > fraction:
        raise DelibError(f"{given} {init} was trained holding out questions with seed {seed} and val_fraction "
                         f"{fraction}; train with the same {seed_flag} and a --val-fraction of at most {fraction} "
                         f"(now {cfg.seed} and {cfg.val_fraction}), or its training questions leak into validation")


def _scores(val: Any, net: Any, start: Any) -> HeldOutScores:
    """held_out.json: the trained policy (and the policy it started from) against the fixed policies on the
    questions the trainer held out (``val``)."""
    from deliberation.rl.held_out import held_out

    return HeldOutScores(held_out(net, val), held_out(start, val) if start is not None else None)


def _summary_line(algo: str, n: int, scores: HeldOutScores, out: Path) -> str:
    policy = scores.policy
    if policy is None:
        return f"{algo}: {n} decisions, nothing held out (val_fraction 0) -> {out}"
    fixed = ", ".join(f"{a.value} {r:.3f}" for a, r in zip(ACTION_ORDER, policy.fixed_rewards))
    accuracies = policy.fixed_accuracies or ()
    accuracy = "/".join(f"{x:.3f}" for x in accuracies)
    names = "/".join(a.value for a in ACTION_ORDER[: len(accuracies)])
    gain = "{:+.3f} [{:+.3f}, {:+.3f}]".format(*policy.gain_ci95) if policy.gain_ci95 else ""
    rule = policy.over_rule()
    over_rule = (f", over the best fixed rule ({rule[0]}, {rule[1]:.3f}) "
                 "{:+.3f} [{:+.3f}, {:+.3f}]".format(*rule[2]) if rule else "")
    return (f"{algo}: {n} decisions; held out ({policy.questions} questions, {policy.decision_points} "
            f"decision points): accuracy {policy.decision_accuracy:.3f} (always {names} {accuracy}), reward "
            f"{policy.policy_reward:.3f} (always {fixed}; oracle {policy.oracle_reward:.3f}), gain over the "
            f"best constant {gain}{over_rule} -> {out}")
