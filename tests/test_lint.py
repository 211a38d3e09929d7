"""Static checks of the source tree: no unused imports or names, no undefined names (pyflakes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_pyflakes_finds_nothing():
    """An unused import or an undefined name is a bug or dead code; pyflakes lists each with its line."""
    paths = [str(REPO / p) for p in ("src", "tests", "bench")]
    done = subprocess.run([sys.executable, "-m", "pyflakes", *paths], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


MAX_LINE = 120


def test_no_line_is_longer_than_the_limit():
    """Lines stay within MAX_LINE characters (the style of the project); each offender is listed."""
    long = [f"{path.relative_to(REPO)}:{n}" for root in ("src", "tests", "bench")
            for path in sorted((REPO / root).rglob("*.py"))
            for n, line in enumerate(path.read_text().splitlines(), 1) if len(line) > MAX_LINE]
    assert not long, "lines over {} characters: {}".format(MAX_LINE, ", ".join(long))
