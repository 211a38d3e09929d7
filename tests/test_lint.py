"""Static checks of the source tree: no unused imports or names, no undefined names (pyflakes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_pyflakes_finds_nothing():
    """An unused import or an undefined name is a bug or dead code; pyflakes lists each with its line."""
    paths = [str(REPO / p) for p in ("src", "tests", "benchmarks")]
    done = subprocess.run([sys.executable, "-m", "pyflakes", *paths], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
