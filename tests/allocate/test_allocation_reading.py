"""The allocation analysis's registered reading of the primary outcome and its goal check, branch by branch
and at the lines (PREREGISTRATION.md, "How each outcome will be read" and "Goal")."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from deliberation.report.paired import Paired
from scripts import REPO, script


@pytest.fixture
def analysis(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "experiments"))  # it reads the comparison's registered arms
    with script("experiments/allocation_analysis.py") as module:
        yield module


def paired(lo: float, hi: float, ratio: float = 1.0, diff: float | None = None) -> Paired:
    return Paired("allocate", "self-consistency-6", "pooled", 450, 300, 20, 10, 120, 0.1,
                  (lo + hi) / 2 if diff is None else diff, (lo, hi), ratio, (ratio, ratio))


@pytest.mark.parametrize("primary, equal_lo, start", [
    ((0.01, 0.05, 0.9), -0.01, "better: "),
    ((0.01, 0.05, 1.0), -0.01, "better: "),
    ((0.01, 0.05, 1.1), 0.005, "better at equal tokens: the allocator spends more tokens"),
    ((0.01, 0.05, 1.1), -0.01, "more accurate, but at more tokens"),
    ((-0.05, -0.01, 1.0), 0.01, "worse: "),
    ((-0.01, 0.03, 1.0), 0.01, "null: no evidence of a difference (the interval contains 0)"),
])
def test_each_outcome_reads_as_registered(analysis, primary, equal_lo, start):
    read = analysis.reading(paired(*primary), asdict(paired(equal_lo, 0.06)))
    assert read.startswith(start)


@pytest.mark.parametrize("hi, ruled_out", [(0.019, True), (9 / 450 - 1e-12, False), (0.02, False), (0.03, False)])
def test_a_null_rules_out_the_goal_only_below_its_line(analysis, hi, ruled_out):
    read = analysis.reading(paired(-0.01, hi), asdict(paired(-0.01, hi)))
    assert read.startswith("null: ") and ("ruled out" in read) is ruled_out


@pytest.mark.parametrize("diff, lo, ratio, met", [
    (9 / 450, 0.001, None, True),  # +2 points in whole questions, read in floating point
    (8 / 450, 0.001, None, False),
    (0.03, 0.0, None, False),  # an interval that touches 0 is not above it
    (0.0, -0.02, 0.6, True),  # 12 samples matched at 60% of their tokens
    (0.0, -0.02, 0.61, False),
])
def test_the_goal_is_met_only_as_written(analysis, diff, lo, ratio, met):
    equal = asdict(paired(lo, 0.06, diff=diff))
    match = None if ratio is None else asdict(paired(-0.02, 0.02, ratio))
    assert analysis.goal_met(equal, match) is met
