"""The primary arm of the paired experiment, by amendment 2's rule, from the state-and-actions table: ``full-signals``
when its whole-episode accuracy on the validation fifth (pooled, one round) is higher than ``full``'s,
otherwise ``full`` (a tie goes to the paper's state, the simpler). The rule is applied here, not by hand,
so the choice a registration commits can be recomputed from the committed table.

    python experiments/choose_arm.py STATE_ACTIONS_OUT

Prints the chosen training run's name; the two accuracies go to stderr. ``STATE_ACTIONS_OUT`` is spelled as
``experiments/state_actions.sh`` was given it (its team.json labels the policies by that path).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from deliberation.report.compare import TEAM_JSON, learned_label

CANDIDATES = ("full", "full-signals")
"""The runs amendment 2 chooses between, the paper's state first (it wins ties)."""
POOLED = "pooled"


def pooled_accuracy(team: dict, out: str, run: str) -> tuple[float, int]:
    """(accuracy, n) of training run ``run`` of ``out`` in the pooled column of ``team`` (team.json)."""
    label = learned_label(f"{out}/train/{run}/policy.pt")
    rows = [r for r in team["rows"] if r["label"] == label and r["column"] == POOLED]
    if len(rows) != 1:
        sys.exit(f"{out}/compare/{TEAM_JSON} has no pooled row {label!r} (its policies: {team['learned']}); "
                 "give the folder as experiments/state_actions.sh was given it")
    return rows[0]["accuracy"], rows[0]["n"]


def choose(team: dict, out: str) -> str:
    """The chosen run's name; ties go to the first candidate."""
    scores = {run: pooled_accuracy(team, out, run) for run in CANDIDATES}
    if len({n for _, n in scores.values()}) != 1:
        sys.exit(f"{out}: the candidates were replayed on different questions ({scores}); rerun the table")
    for run, (accuracy, n) in scores.items():
        print(f"{run}: validation accuracy {accuracy:.4f} (n = {n})", file=sys.stderr)
    return max(CANDIDATES, key=lambda run: (scores[run][0], -CANDIDATES.index(run)))


def main(out: str) -> None:
    path = Path(out) / "compare" / TEAM_JSON
    if not path.is_file():
        sys.exit(f"{path} not found; run experiments/state_actions.sh first")
    print(choose(json.loads(path.read_text()), out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python experiments/choose_arm.py STATE_ACTIONS_OUT")
    main(sys.argv[1])
