"""Reading a committed markdown page's tables back, for the tests that check a document copies a record's table
instead of retyping it."""

from __future__ import annotations

from typing import Callable


def table_under(markdown: str, is_heading: Callable[[str], bool]) -> list[str]:
    """The lines of the first table after the first line ``is_heading`` accepts (header and rule included)."""
    lines = markdown.splitlines()
    at = next(i for i, line in enumerate(lines) if is_heading(line))
    start = next(i for i in range(at, len(lines)) if lines[i].startswith("| "))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("| ")), len(lines))
    return lines[start:end]
