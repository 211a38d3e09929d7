"""The report's training table: one row per training directory, read from its metrics and held_out.json.

It answers what the training figures show only approximately: the held-out decision accuracy and
counterfactual reward at the end of each stage, the greedy action shares before the policy-gradient stage
(the SFT policy) and after it, and the same held-out decisions scored by the constant policies and the
oracle (``deliberation.rl.evaluate``). A reward-scale ablation is these rows side by side.
"""

from __future__ import annotations

from typing import Any, Sequence

from deliberation.plots import TrainingPoint, TrainingRun
from deliberation.report import md_line

HEADER = ("run", "final stage", "reward scale", "steps", "held-out accuracy (SFT -> final)",
          "held-out reward (SFT -> final)", "actions P/R/C (SFT -> final)", "always P / R / C", "oracle")


def training_markdown(runs: Sequence[TrainingRun]) -> str:
    """A markdown table of ``runs`` (empty string when there are none)."""
    if not runs:
        return ""
    lines = [md_line(HEADER), md_line(("---",) * len(HEADER))]
    lines += [md_line(_row(run)) for run in sorted(runs, key=lambda r: (r.name, r.reward_scale or 0.0))]
    return "\n".join(lines) + "\n"


def _row(run: TrainingRun) -> tuple[str, ...]:
    before, after = _stage_ends(run.points)
    fixed, oracle = _references(run.held_out)
    scale = "" if run.reward_scale is None else f"{run.reward_scale:g}"
    return (run.name, run.final_stage, scale, str(len(run.points)),
            _pair(before, after, lambda p: _num(p.val_accuracy)),
            _pair(before, after, lambda p: _num(p.val_reward)),
            _pair(before, after, lambda p: _shares(p.val_actions)), fixed, oracle)


def _stage_ends(points: Sequence[TrainingPoint]) -> tuple[TrainingPoint | None, TrainingPoint | None]:
    """(last SFT point, last point); the first is None when the run has no SFT stage before another."""
    if not points:
        return None, None
    sft = [p for p in points if p.stage == "sft"]
    before = sft[-1] if sft and points[-1].stage != "sft" else None
    return before, points[-1]


def _pair(before: TrainingPoint | None, after: TrainingPoint | None, show: Any) -> str:
    if after is None:
        return ""
    return show(after) if before is None else f"{show(before)} -> {show(after)}"


def _references(held_out: dict[str, Any] | None) -> tuple[str, str]:
    """('always P / R / C' rewards, oracle reward) from held_out.json, blank when absent."""
    policy = (held_out or {}).get("policy")
    if not policy:
        return "", ""
    return " / ".join(_num(r) for r in policy["fixed_rewards"]), _num(policy["oracle_reward"])


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def _shares(shares: Sequence[float] | None) -> str:
    return "" if shares is None else "/".join(f"{round(100 * s)}" for s in shares)
