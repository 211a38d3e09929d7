"""Checked arithmetic (engine/arith_check.py): written computations re-evaluated exactly, in the notations
small models write, and nothing that is not a computation of numbers."""

from __future__ import annotations

from fractions import Fraction

import pytest

from deliberation.engine.arith_check import steps, summarize


@pytest.mark.parametrize("text, holds", [
    (r"\[ 48 \div 2 = 24 \]", [True]),
    (r"\[ 48 + 24 = 73 \]", [False]),
    (r"\frac{5}{6} \text{ hours} \times 12 \text{ dollars/hour} = \frac{5 \times 12}{6} = 10", [True, True]),
    ("So 3 x 4 = 13 apples.", [False]),
    ("1,000 * 2 = 2,000", [True]),
    ("20% * 50 = 10", [True]),
    ("10/3 = 3.33, and 10/3 = 3.4", [True, False]),  # rounded to what is written, or not
    ("$18 \\cdot 2 = 36$", [True]),
    ("1. 4 * 3 = 12", [True]),  # a numbered list's "1. " is not part of the computation
    ("(3 + 4) * 2 = 14 apples", [True]),
    ("100 + 65 + 130 = 305", [False]),
])
def test_written_computations_are_checked(text, holds):
    assert [s.holds for s in steps(text)] == holds


@pytest.mark.parametrize("text", [
    "2x + 3 = 11",  # algebra: the left side continues a term that is not a number
    "- 48 + 24 = 72",  # a bullet's dash is not a minus
    "so 5 * 2 = 10x",
    "x = 5",  # no computation
    "45 = -29",  # no operator between two operands
    "The answer is 42.",
])
def test_what_is_not_a_computation_of_numbers_is_not_checked(text):
    assert steps(text) == []


def test_summary_counts_wrong_steps_and_whether_the_answer_follows():
    text = "48 / 2 = 24\n48 + 24 = 73\nSo the answer is 73."
    found = summarize(text, "73")
    assert (found.checked, found.wrong, found.answer_follows) == (2, 1, True)
    assert summarize(text, "72").answer_follows is False
    assert summarize("No numbers here.", "3").answer_follows is None
    assert steps("48 + 24 = 72")[0].value == Fraction(72)
