"""MMLU answer checking: the letter (or the exact choice text) of the final answer."""

from __future__ import annotations

import pytest

from deliberation.benchmarks import get
from deliberation.types import Example

EXAMPLE = Example(id="t", question="What is 2 + 2?", answer="B", choices=("3", "4", "Five", "None of these"))

CASES = [
    ("(B)", True),
    ("Answer: B", True),
    ("**Answer:** B", True),
    ("The answer is (B).", True),
    ("\\boxed{B}", True),
    ("\\boxed{\\text{B}}", True),
    ("\\boxed{(B) 4}", True),
    ("B.", True),
    ("B", True),
    ("Let me think. A is too small and C is too large.\nB) 4", True),
    ("The correct option is B.", True),
    ("4", True),  # exactly the text of choice B
    ("The answer is 4.", True),
    ("\\boxed{4}", True),
    ("```python\nprint('B')\n```\n```output\nB\n```", True),
    ("\\boxed{A} no wait, \\boxed{B}", True),
    ("\\boxed{B} no wait, \\boxed{A}", False),
    ("Answer: A", False),
    ("Answer: B or C", False),  # several different letters: unparseable
    ("The answer is B, but C also works.", False),
    ("A good question.", False),  # the article "A" is no answer
    ("Answer: five", False),  # choice texts match exactly, not loosely
    ("none", False),
    ("", False),
    ("I do not know.", False),
    ("\\boxed{E}", False),
]


@pytest.mark.parametrize(("text", "correct"), CASES)
def test_mmlu_scoring(text: str, correct: bool) -> None:
    assert get("mmlu").score(EXAMPLE, text) is correct


@pytest.mark.parametrize(
    ("text", "letter"),
    [("(C)", "C"), ("Answer: D", "D"), ("B and C", None), ("", None), ("4", None), ("the answer is a", None)],
)
def test_extract_reads_letters_only(text: str, letter: str | None) -> None:
    assert get("mmlu").extract(text) == letter


def test_extract_for_matches_choice_text() -> None:
    bench = get("mmlu")
    assert bench.extract_for(EXAMPLE, "The answer is None of these.") == "D"
    assert bench.extract_for(EXAMPLE, "Answer: 3") == "A"
    assert bench.extract_for(EXAMPLE, "Answer: 7") is None


DAYS = Example(id="t", question="q", answer="B", choices=("A lunar day", "A solar day is longer", "Neither", "Both"))
VITAMINS = Example(id="t", question="q", answer="A", choices=("Vitamin D", "Vitamin C", "Iron", "Zinc"))


@pytest.mark.parametrize(
    ("example", "text", "letter"),
    [
        (DAYS, "The answer is B. A solar day is longer.", "B"),  # a label followed by its own choice's text
        (DAYS, "The answer is: A solar day is longer.", "B"),  # the choice's text, not the article "A"
        (DAYS, "Answer: A lunar day", "A"),
        (DAYS, "Answer: B", "B"),
        (VITAMINS, "\\boxed{Vitamin D}", "A"),  # the choice's text, not the letter inside it
        (VITAMINS, "\\boxed{D}", "D"),
    ],
)
def test_choice_text_wins_over_letters_inside_it(example: Example, text: str, letter: str) -> None:
    assert get("mmlu").extract_for(example, text) == letter


def test_format_question_labels_four_choices() -> None:
    shown = get("mmlu").format_question(EXAMPLE)
    assert shown.startswith("What is 2 + 2?")
    assert "\nA. 3\nB. 4\nC. Five\nD. None of these\n" in shown
    assert "\\boxed{" in shown


def test_answer_key_is_the_letter() -> None:
    bench = get("mmlu")
    assert bench.answer_key("(b)") == bench.answer_key("B.") == bench.answer_key(" B ") == "B"


def test_every_gold_letter_scores_correct(data_dir: str | None) -> None:
    bench = get("mmlu")
    examples = bench.load("validation", data_dir=data_dir)
    assert all(bench.score(ex, f"The answer is \\boxed{{{ex.answer}}}.") for ex in examples)
    other = {"A": "B", "B": "C", "C": "D", "D": "A"}
    assert not any(bench.score(ex, f"Answer: {other[ex.answer]}") for ex in examples)
