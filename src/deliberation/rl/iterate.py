"""``delib iterate``: collect with the current policy, train, repeat (docs/design.md, section Training).

Iteration ``i`` collects rollouts on every benchmark with the behaviour policy of iteration ``i - 1`` (for
the first, ``--policy`` or the agreement-threshold rule, epsilon-mixed as in ``delib collect``), then
trains on this iteration's rollouts, starting from (and KL-regularized to) that behaviour policy; the first
iteration without a start policy trains SFT first, as ``delib train`` does. Each iteration samples with
engine seed ``seed + i``: every decision already records the counterfactual reward of all three actions,
so with the same seed a new behaviour policy would mostly revisit the same states.

Layout under ``out``: ``iter-<i>/rollouts/<benchmark>/`` (``delib collect`` directories) and
``iter-<i>/policy/`` (``delib train`` outputs); ``delib iterate`` gives every iteration one response
cache, ``<out>/responses.sqlite``. Resumable step by step: collection skips finished questions, and a
policy file that exists is complete (``write_training_outputs`` renames its folder into place), so a rerun
does only what is missing. ``<out>/iterate.json`` records the benchmarks and the question limit of the
iterations, once the first has collected (before any training): a rerun that asks other questions is refused,
since it would add rollouts to iterations whose policies were trained without them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from deliberation.errors import DelibError, read_object, repeated, require_at_least
from deliberation.outputs.kinds import ITERATION, ITERATIONS, refuse_other_kind
from deliberation.files import write_json_atomic
from deliberation.outputs.resume import ResumeRule, check_recorded, check_resume
from deliberation.policy.shipped import checkpoint_path
from deliberation.rl.collect import CollectSpec, collect
from deliberation.rl.config import CHECKPOINT_NAME, TrainConfig
from deliberation.rl.pipeline import TrainRequest, check_init_split, not_in_rollouts, run_training
from deliberation.types import to_json

FLAGS = ("--policy", "--train-seed")
"""How ``delib iterate`` names the start policy and the training seed in the trainer's errors."""
RECORD = "iterate.json"
QUESTIONS = ResumeRule(compared=("benchmarks", "limit"))
"""What the iterations of one ``--out`` share beyond each collection's manifest and each policy's config.json:
the questions each collects on (a collection may grow its own, so its manifest does not compare the limit)."""
FIX = "rerun with those settings, or into another --out (the iterations of one --out share them)"


@dataclass(frozen=True)
class IterateSpec:
    """Iterations of collect-then-train; ``collect`` is the template (its benchmark and policy are set
    per iteration)."""

    collect: CollectSpec
    benchmarks: tuple[str, ...]
    iterations: int
    train: TrainConfig = field(default_factory=TrainConfig)
    """``delib train`` settings (the policy-gradient algo, epochs, lr, kl_coef, ...)."""

    def __post_init__(self) -> None:
        require_at_least("--iterations", self.iterations)
        if not self.benchmarks:
            raise DelibError("give at least one --benchmark to collect on")
        twice = repeated(self.benchmarks)
        if twice is not None:
            raise DelibError(f"--benchmark names {twice} twice; name each benchmark once")
        from deliberation.rl.algorithms import ALGORITHMS

        if ALGORITHMS[self.train.algo].supervised:
            raise DelibError("--algo sft learns from oracle labels, not from its own rollouts; choose a policy-"
                             "gradient algo (softrankpo, grpo, ...)")
        self._check_training()

    def _check_training(self) -> None:
        """Refuse, before hours of collection, training settings that would fail after it (``TrainConfig``
        checks its own values): a group larger than the joint actions collected, a start policy blind to other
        features or trained on questions this run will hold out, a reward rollouts do not hold."""
        from deliberation.engine.state import FEATURE_NAMES, FEATURE_VERSION
        from deliberation.policy.checkpoint import load_policy
        from deliberation.rl.trainer import check_ignored

        cfg = self.train
        beyond = not_in_rollouts(cfg)
        if beyond:
            raise DelibError(f"{beyond[0]} is not in the rollouts `delib iterate` collects ({beyond[1]}): train "
                             f"with {beyond[2]}, or on tree stores with `delib train --trees`")
        if cfg.group_size is not None and cfg.group_size > self.collect.joint_actions:
            raise DelibError(f"--group-size {cfg.group_size} is more than the --joint-actions "
                             f"{self.collect.joint_actions} collected per decision; lower it or collect more")
        if self.collect.policy is not None:
            start = checkpoint_path(self.collect.policy)
            check_ignored(load_policy(start, FEATURE_NAMES, FEATURE_VERSION).net, cfg)
            check_init_split(start, cfg, self._held_out(), FLAGS)

    def _held_out(self) -> list[str]:
        """The questions the first training will hold out: the trainer's hash rule over every question the
        collection asks. The trainer applies it to the questions with decisions, so a policy trained on a
        question that ends up with none (rare) is refused here though the exact check after collecting would
        take it."""
        from deliberation import benchmarks
        from deliberation.benchmarks.selection import load_selected
        from deliberation.rl.data import held_out_names

        c = self.collect
        asked = [e.id for bench in self.benchmarks
                 for e in load_selected(benchmarks.get(bench), c.split, c.limit, c.selection, c.data_dir)]
        return sorted(held_out_names(asked, self.train.val_fraction, self.train.seed))


def policy_file(out: str | Path, iteration: int) -> Path:
    """The checkpoint iteration ``iteration`` trains."""
    return Path(out) / ITERATION.format(iteration) / "policy" / CHECKPOINT_NAME


def iterate(spec: IterateSpec, out: str, progress: bool = True,
            notify: Callable[[str], None] | None = None) -> Path:
    """Run (or resume) every iteration; returns the last policy file."""
    refuse_other_kind(out, ITERATIONS)
    _check_trained(spec, out)
    asked = {"benchmarks": sorted(spec.benchmarks), "limit": spec.collect.limit}
    recorded = check_recorded(Path(out), asked, QUESTIONS, "iterations", FIX, RECORD)
    behaviour = spec.collect.policy
    for i in range(spec.iterations):
        rollouts = [_collect(spec, out, i, bench, behaviour, progress) for bench in spec.benchmarks]
        if not recorded:  # the questions are fixed from now on: a policy is trained on them
            write_json_atomic(Path(out) / RECORD, asked)
            recorded = True
        line = _train(spec, out, i, rollouts, behaviour)
        if notify is not None:
            notify(f"iteration {i}: {line}")
        behaviour = str(policy_file(out, i))
    return Path(behaviour)


def _collect(spec: IterateSpec, out: str, i: int, bench: str, behaviour: str | None, progress: bool) -> str:
    template = spec.collect
    directory = Path(out) / ITERATION.format(i) / "rollouts" / bench
    one = replace(template, benchmark=bench, policy=behaviour,
                  engine=replace(template.engine, seed=template.engine.seed + i),
                  command=f"{template.command} (iteration {i}, {bench})".strip())
    collect(one, str(directory), progress=progress)
    return str(directory)


def _check_trained(spec: IterateSpec, out: str) -> None:
    """Refuse, before any model loads, to resume iterations whose policies were trained under other training
    settings than ``spec``'s (the network's sizes may differ only where a start policy set them)."""
    rule = ResumeRule(may_change=frozenset({"hidden", "heads"}) if spec.collect.policy else frozenset())
    for i in range(spec.iterations):
        done = policy_file(out, i)
        if done.exists():
            check_resume(done.parent, "a policy trained", read_object(done.parent / "config.json"),
                         to_json(spec.train), rule, FIX)


def _train(spec: IterateSpec, out: str, i: int, rollouts: list[str], behaviour: str | None) -> str:
    done = policy_file(out, i)
    if done.exists():  # under the same settings (``_check_trained``)
        return f"trained earlier -> {done.parent}"
    start = None if behaviour is None else str(checkpoint_path(behaviour))  # --policy may name a shipped one
    return run_training(TrainRequest(spec.train, tuple(rollouts), start, str(done.parent),
                                     flags=FLAGS))
