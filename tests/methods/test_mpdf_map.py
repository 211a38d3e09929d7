"""The map of MPDF in methods/mpdf.py's docstring names real code: every ``deliberation.mod:name`` it cites
imports, so the one place a reader finds the algorithm cannot drift from the code."""

from __future__ import annotations

import importlib
import re

from deliberation.methods import mpdf

CITED = re.findall(r"``(deliberation(?:\.\w+)+):(\w+)``", mpdf.__doc__ or "")


def test_the_map_cites_every_step():
    steps = re.findall(r"^(\d)\. ", mpdf.__doc__ or "", re.M)
    assert steps == [str(i) for i in range(1, 9)]
    assert len(CITED) >= 15


def test_every_cited_name_exists():
    missing = [f"{module}:{name}" for module, name in CITED
               if not hasattr(importlib.import_module(module), name)]
    assert not missing, f"methods/mpdf.py cites names that do not exist: {missing}"
