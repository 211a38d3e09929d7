"""The allocation experiment's numbers in the documents are copied from its registered analysis, not retyped:
docs/results.md holds analysis.md's primary and secondary rows verbatim, and the README's paragraph states the
primary's, the equal-token secondary's and adaptive-consistency's differences as analysis.md prints them."""

from __future__ import annotations

from pathlib import Path

from markdown_tables import table_under

REPO = Path(__file__).resolve().parents[2]
ANALYSIS = REPO / "docs" / "results" / "allocation" / "analysis.md"


def registered_rows() -> list[str]:
    """The primary's row and the six secondaries' (headers dropped), as analysis.md prints them."""
    analysis = ANALYSIS.read_text()
    rows = [*table_under(analysis, "## Primary".__eq__)[2:],
            *table_under(analysis, "## Secondaries (Holm over the six)".__eq__)[2:]]
    assert len(rows) == 7, rows
    return rows


def difference(row: str) -> str:
    """A row's 'difference, points [95% CI]' cell."""
    return row.split(" | ")[5]


def test_the_results_overview_holds_the_registered_rows_verbatim():
    overview = (REPO / "docs" / "results.md").read_text()
    assert "\n".join(registered_rows()) in overview


def test_the_readme_states_the_registered_differences():
    readme = " ".join((REPO / "README.md").read_text().split())
    primary, equal_tokens, adaptive = registered_rows()[:3]
    assert "adaptive" in adaptive and "equal tokens" in equal_tokens
    for row in (primary, equal_tokens, adaptive):
        assert difference(row) in readme, f"README.md lacks {difference(row)} ({row.split(' | ')[1]})"
