"""The README's headline is the paired experiment's latest look, copied from its record and not retyped: the
pooled table of docs/results/paired/look-K/headline.md (K the last look in summary.json) stands in the
README row for row, and the README names look K and its decision (a result "so far" until a look stops the
design)."""

from __future__ import annotations

import json
from pathlib import Path

from deliberation.report.paired import POOLED

from looks.sequential import BOUNDARIES
from markdown_tables import table_under

REPO = Path(__file__).resolve().parents[2]
PAIRED = REPO / "docs" / "results" / "paired"


def latest_look() -> dict:
    return max(json.loads((PAIRED / "summary.json").read_text())["looks"], key=lambda look: look["look"])


def pooled_table(markdown: str) -> list[str]:
    """The lines of a look's headline.md table under its pooled heading."""
    return table_under(markdown, lambda line: line.startswith(f"**{POOLED}**"))


def test_the_readme_table_is_the_latest_looks_pooled_table():
    look = latest_look()
    table = pooled_table((PAIRED / f"look-{look['look']}" / "headline.md").read_text())
    readme = (REPO / "README.md").read_text()
    assert len(table) > 3 and "\n".join(table) in readme, f"README.md lacks look {look['look']}'s pooled table"


def test_the_readme_names_the_latest_look_and_its_decision():
    look = latest_look()
    readme = " ".join((REPO / "README.md").read_text().split())
    k, reason = look["look"], look["decision"]["reason"]
    result = "**Result**" if look["decision"]["stop"] else "**Result so far**"  # final once a look stops
    assert f"{result} (look {k} of {len(BOUNDARIES)}" in readme
    assert f"### The paired experiment, look {k} of {len(BOUNDARIES)}" in readme
    assert f"Decision at look {k}: **{reason}**" in readme
