"""The meta-actions each arm of a look took, per benchmark and pooled.

docs/results/paired/PREREGISTRATION.md ("Analysis") reports the action distribution of the learned policy
beside every arm's accuracy. The look's figure (``report/actions_per_round.png``) pools the benchmarks, so
the look's record also keeps the counts, per benchmark and pooled, for every arm that took meta-actions
(the constants, the best rule, the learned and SFT policies, the oracle, the RESAMPLE rules), read from the
run folders the look's report was made from (``report/loading.py``: the same labels as its tables).
"""

from __future__ import annotations

from collections.abc import Sequence

from deliberation.actions import ACTION_ORDER
from deliberation.report.loading import RunResult
from deliberation.report.paired import POOLED
from deliberation.report.tables import column_of


def action_counts(results: Sequence[RunResult]) -> dict[str, dict[str, dict[str, int]]]:
    """label -> benchmark column (and pooled) -> {"decisions": agent decisions over rounds 1..R, and one count
    per action of ``ACTION_ORDER``}; labels that took no meta-action are left out."""
    table: dict[str, dict[str, dict[str, int]]] = {}
    for r in results:
        taken = [sum(per_round[k] for per_round in r.actions_by_round if k < len(per_round))
                 for k in range(len(ACTION_ORDER))]
        if not any(taken):
            continue
        columns = table.setdefault(r.label, {})
        for column in (column_of(r), POOLED):
            cell = columns.setdefault(column, {"decisions": 0, **{a.value: 0 for a in ACTION_ORDER}})
            cell["decisions"] += sum(taken)
            for action, n in zip(ACTION_ORDER, taken):
                cell[action.value] += n
    return {label: dict(sorted(columns.items(), key=lambda c: (c[0] != POOLED, c[0])))
            for label, columns in table.items()}


ACTIONS_HEAD = ("| arm | benchmark | decisions | " + " | ".join(f"{a.value} %" for a in ACTION_ORDER) + " |\n"
                "| --- | --- | ---: | " + " | ".join("---:" for _ in ACTION_ORDER) + " |\n")


def actions_markdown(actions: dict[str, dict[str, dict[str, int]]], learned: str) -> str:
    """The counts as shares of each arm's decisions, the learned policy first, pooled before each benchmark."""
    order = sorted(actions, key=lambda label: (label != learned, label))
    lines = [f"| {label} | {column} | {cell['decisions']} | " +
             " | ".join(f"{100 * cell[a.value] / max(cell['decisions'], 1):.1f}" for a in ACTION_ORDER) + " |"
             for label in order for column, cell in actions[label].items()]
    return ("Meta-actions at rounds 1..R (agent decisions; an arm that stops when its team agrees at round 0 "
            "takes none on that question, the oracle decides on every one)"
            f"\n\n{ACTIONS_HEAD}" + "\n".join(lines))
