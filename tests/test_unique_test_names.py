"""Every test file has a name of its own: pytest imports test modules by their basename (the suite has no
package __init__ files), so a second ``test_x.py`` in another folder stops the whole run at collection."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_no_two_test_files_share_a_basename():
    names = Counter(p.name for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts)
    assert [name for name, n in names.items() if n > 1] == []
