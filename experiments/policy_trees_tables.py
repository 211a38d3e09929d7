"""The tables of docs/results/policy-trees/README.md from the comparisons `experiments/policy_trees.sh` wrote.

    python experiments/policy_trees_tables.py [OUT]  # OUT/compare/*/team.json -> markdown on stdout
                                                     # (OUT default: docs/results/policy-trees)

One table per comparison (main, components, features, scale, depth-N, team-NAME): each row's whole-episode accuracy
and tokens per question on the held-out questions (pooled), and its paired difference to the best rule
(points, paired bootstrap 95% interval) with the exact McNemar p. Arms are named by their checkpoint folder.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from deliberation.report.paired import POOLED, diff_points
from deliberation.report.compare_plot import short_label


def table(team: dict) -> str:
    """One comparison as markdown (pooled rows when there are several benchmark splits)."""
    columns = {r["column"] for r in team["rows"]}
    column = POOLED if POOLED in columns else columns.pop()
    paired = {p["label"]: p for p in team["paired"] if p["column"] == column}
    lines = ["| arm | n | accuracy | tokens/question | diff to best rule [95% CI] | McNemar p |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in (r for r in team["rows"] if r["column"] == column):
        p = paired.get(r["label"])
        diff = "reference" if p is None else diff_points(p["accuracy_diff"], p["accuracy_diff_ci95"])
        mcnemar = "" if p is None else f"{p['mcnemar_p']:.3g}"
        lines.append(f"| {short_label(r['label'])} | {r['n']} | {r['accuracy']:.3f} | {r['tokens_per_question']:.0f} | "
                     f"{diff} | {mcnemar} |")
    return "\n".join(lines)


def main(out: str) -> None:
    for path in sorted(Path(out, "compare").glob("*/team.json")):
        team = json.loads(path.read_text())
        print(f"### {path.parent.name} (rounds = {team['rounds']}, reference: {team['reference']})\n")
        print(table(team) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/results/policy-trees")
