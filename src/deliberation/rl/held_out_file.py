"""``held_out.json`` of a ``delib train`` run: its scores on the questions the trainer held out, read by the report.

The trained policy (and the policy its gradient stage started from) scored against the fixed policies and the
oracle on counterfactual rewards (``rl/held_out.py`` computes them). Its record, its one writer and its one
reader live here, apart from the scoring, so the report reads the file without loading torch.

The file keeps the keys, and the order of the keys, it always had (the fields' order, not sorted). Files
written before a field existed read as what they meant: the first ones lack the decision points, the label
accuracy, the tied share, the constants' accuracies and the gain interval (None, and not written back);
files written before the fixed rules were scored lack all four rule entries (``rule_rewards`` None).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from deliberation.errors import DelibError, read_json
from deliberation.files import write_text_atomic
from deliberation.types import ADDED_LATER, from_json, strict_json, to_json

HELD_OUT_FILE = "held_out.json"
RULE_ENTRIES = ("rule_rewards", "rule_accuracies", "best_rule", "gain_over_rule_ci95")
"""The entries a file holds once the fixed rules were scored, all or none."""
FIX = "restore it from a copy, or delete it (the report then reads the run's metrics.jsonl)"


@dataclass(frozen=True, kw_only=True)
class HeldOut:
    """Mean counterfactual reward per decision on held-out questions, for the policy and the references."""

    questions: int
    decisions: int  # every sample of every decision point
    decision_points: int | None = field(default=None, metadata=ADDED_LATER)
    """Distinct (question, round, agent): the K samples of one share their features."""
    policy_reward: float
    decision_accuracy: float  # greedy action earns the best reward of the set (ties count as right)
    label_accuracy: float | None = field(default=None, metadata=ADDED_LATER)
    """Greedy action == tie-broken oracle label (the SFT target)."""
    tied_share: float | None = field(default=None, metadata=ADDED_LATER)
    """Decisions where every action earns the same reward."""
    policy_actions: tuple[float, ...]  # greedy action shares, the action set's order
    fixed_rewards: tuple[float, ...]  # always-PERSIST, always-REFINE, always-CONCEDE (, always-RESAMPLE)
    fixed_accuracies: tuple[float, ...] | None = field(default=None, metadata=ADDED_LATER)
    """The constants' tie-aware accuracy."""
    gain_ci95: tuple[float, float, float] | None = field(default=None, metadata=ADDED_LATER)
    """Policy reward minus the best fixed policy's: (mean, lo, hi)."""
    oracle_reward: float
    oracle_actions: tuple[float, ...]
    rule_rewards: Mapping[str, float] | None = None
    """The fixed rules' rewards (``rl/rule_actions.py``); empty for features other than the engine's, None in
    files written before the rules were scored (then no rule entry is written)."""
    rule_accuracies: Mapping[str, float] | None = None  # their tie-aware accuracy
    best_rule: str = ""  # the fixed rule of highest reward: the bar a learned policy must clear
    gain_over_rule_ci95: tuple[float, float, float] | None = None  # policy minus best_rule: (mean, lo, hi)

    def over_rule(self) -> tuple[str, float, tuple[float, float, float]] | None:
        """(the best fixed rule, its reward, the policy's gain over it: mean, lo, hi); None where no rule was
        scored."""
        if not self.best_rule or self.rule_rewards is None or self.gain_over_rule_ci95 is None:
            return None
        return self.best_rule, self.rule_rewards[self.best_rule], self.gain_over_rule_ci95


@dataclass(frozen=True)
class HeldOutScores:
    """What held_out.json holds: the trained policy's scores and its start policy's, on the same decisions."""

    policy: HeldOut | None
    """None: nothing was held out (``val_fraction`` 0)."""
    start: HeldOut | None
    """The policy the gradient stage started from (an ``--init`` checkpoint or the SFT stage); None for sft."""


def write_held_out(folder: Path, scores: HeldOutScores) -> None:
    """Write held_out.json into the training directory ``folder`` (``read_held_out`` reads it back equal)."""
    record = {"policy": _entries(scores.policy), "start": _entries(scores.start)}
    write_text_atomic(folder / HELD_OUT_FILE, strict_json(record, indent=2) + "\n")


def _entries(scores: HeldOut | None) -> dict[str, Any] | None:
    if scores is None:
        return None
    found = to_json(scores)
    return found if scores.rule_rewards is not None else {k: v for k, v in found.items() if k not in RULE_ENTRIES}


def read_held_out(folder: Path) -> HeldOutScores | None:
    """The held_out.json of the training directory ``folder``, None when it has none (a run from before the
    file); a file of another shape is a one-line DelibError naming it and the fix."""
    path = folder / HELD_OUT_FILE
    if not path.exists():
        return None
    try:
        return from_json(HeldOutScores, read_json(path, FIX))
    except (TypeError, ValueError) as err:
        raise DelibError(f"{path} is not a held_out.json of `delib train` ({err}); {FIX}") from err
