"""The report's training table: one row per training directory, read from its metrics and held_out.json.

It answers what the training figures show only approximately: the held-out decision accuracy and
counterfactual reward at the end of each stage, the mean and spread of the held-out accuracy over the
final stage's last ``TAIL_STEPS`` steps (on a few hundred held-out decisions one step's value moves by
about a point from the next, so the last step alone is a noisy summary), the greedy action shares
before the policy-gradient stage (the SFT policy) and after it, and the same held-out decisions scored by
the constant policies and the oracle (``deliberation.rl.held_out``). A reward-scale ablation is these rows
side by side.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Sequence

from deliberation.report.loading import TrainingPoint, TrainingRun
from deliberation.report.tables import md_line
from deliberation.rl.algorithms import is_supervised
from deliberation.rl.held_out_file import HeldOut, HeldOutScores

TAIL_STEPS = 100

HEADER = ("run", "final stage", "reward scale", "steps", "held-out accuracy (start -> final)",
          f"held-out accuracy, last {TAIL_STEPS} steps (mean ± sd)",
          "held-out reward (start -> final)", "actions P/R/C (start -> final)", "always P / R / C",
          "always P / R / C accuracy", "gain over best constant (95% CI)", "best fixed rule: reward",
          "gain over best rule (95% CI)", "oracle")

LEGEND = ("Scores are per held-out decision, on counterfactual rewards: \"always X\" is the deciding agent "
          "taking X while its peers act as collected (not a team that always does X); accuracy counts the "
          "greedy action right when it earns the best reward of the three, ties included. The fixed rules "
          "(agreement-threshold, confidence-threshold) are scored from the recorded features the same way.\n")


def training_markdown(runs: Sequence[TrainingRun]) -> str:
    """A markdown table of ``runs`` (empty string when there are none)."""
    if not runs:
        return ""
    lines = [md_line(HEADER), md_line(("---",) * len(HEADER))]
    lines += [md_line(_row(run)) for run in sorted(runs, key=lambda r: (r.name, r.reward_scale or 0.0))]
    return "\n".join(lines) + "\n\n" + LEGEND


def _row(run: TrainingRun) -> tuple[str, ...]:
    before, after = _ends(run)
    fixed, fixed_accuracy, gain, oracle = _references(run.held_out)
    rule, rule_gain = _rule(run.held_out)
    scale = "" if run.reward_scale is None else f"{run.reward_scale:g}"
    return (run.name, run.final_stage, scale, str(len(run.points)),
            _pair(before, after, lambda p: _num(p.val_accuracy)), _tail_accuracy(run),
            _pair(before, after, lambda p: _num(p.val_reward)),
            _pair(before, after, lambda p: _shares(p.val_actions)), fixed, fixed_accuracy, gain, rule, rule_gain,
            oracle)


def _ends(run: TrainingRun) -> tuple[_Scores | None, _Scores | None]:
    """(start policy, final policy) on held-out decisions: from held_out.json when the run wrote one
    (it scores an ``--init`` policy too), else the last SFT point before another stage and the last point."""
    compared = run.held_out
    if compared is not None and compared.policy is not None:
        start = compared.start
        return (_from_held_out(start) if start is not None else None), _from_held_out(compared.policy)
    points = run.points
    if not points:
        return None, None
    sft = [p for p in points if is_supervised(p.stage)]
    before = sft[-1] if sft and not is_supervised(points[-1].stage) else None
    return (_from_point(before) if before else None), _from_point(points[-1])


def _tail_accuracy(run: TrainingRun) -> str:
    """'mean ± sd' (population sd) of the held-out accuracy over the final stage's last TAIL_STEPS points."""
    final = [p.val_accuracy for p in run.points if p.stage == run.final_stage and p.val_accuracy is not None]
    if not final:
        return ""
    tail = final[-TAIL_STEPS:]
    return f"{statistics.fmean(tail):.3f} ± {statistics.pstdev(tail):.3f}"


@dataclass(frozen=True)
class _Scores:
    val_accuracy: float | None
    val_reward: float | None
    val_actions: Sequence[float] | None


def _from_point(point: TrainingPoint) -> _Scores:
    return _Scores(point.val_accuracy, point.val_reward, point.val_actions)


def _from_held_out(scores: HeldOut) -> _Scores:
    return _Scores(scores.decision_accuracy, scores.policy_reward, scores.policy_actions)


def _pair(before: _Scores | None, after: _Scores | None, show: Any) -> str:
    if after is None:
        return ""
    return show(after) if before is None else f"{show(before)} -> {show(after)}"


def _references(held_out: HeldOutScores | None) -> tuple[str, str, str, str]:
    """(constant policies' rewards, their accuracies, the final policy's gain over the best of them with its
    interval, oracle reward) from held_out.json, blank when absent (or written before the field existed)."""
    policy = held_out.policy if held_out is not None else None
    if policy is None:
        return "", "", "", ""
    accuracy = " / ".join(_num(a) for a in policy.fixed_accuracies or ())
    gain = "{:+.3f} [{:+.3f}, {:+.3f}]".format(*policy.gain_ci95) if policy.gain_ci95 else ""
    return " / ".join(_num(r) for r in policy.fixed_rewards), accuracy, gain, _num(policy.oracle_reward)


def _rule(held_out: HeldOutScores | None) -> tuple[str, str]:
    """(best fixed rule and its reward, the policy's gain over it with its interval); blank for a
    held_out.json written before the rules were scored."""
    rule = held_out.policy.over_rule() if held_out is not None and held_out.policy is not None else None
    if rule is None:
        return "", ""
    name, reward, gain = rule
    return f"{name}: {_num(reward)}", "{:+.3f} [{:+.3f}, {:+.3f}]".format(*gain)


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def _shares(shares: Sequence[float] | None) -> str:
    return "" if shares is None else "/".join(f"{round(100 * s)}" for s in shares)
