"""Numeric answer checking: the shared parser and the GSM8K, AMC23 and AIME24 scorers."""

from __future__ import annotations

from fractions import Fraction

import pytest

from deliberation.benchmarks import get
from deliberation.benchmarks.helpers import arith, numeric
from deliberation.types import Example

CODE_THEN_OUTPUT = "```python\neggs = 16 - 3 - 4\nprint(eggs * 2)\n```\n```output\n18\n```\nSo that is it."
CODE_ONLY = "```python\neggs = 16 - 3 - 4\nprint(round(eggs * 2, 2))\n```"

GSM8K_CASES = [
    ("18", "The final answer is $\\boxed{18}$.", True),
    ("18", "She makes $18.00 every day.", True),
    ("18", "She makes 18 dollars.", True),
    ("18", "Janet sells 16 - 3 - 4 = 9 eggs, and 9 * 2 = 18", True),
    ("1000", "Answer: 1,000", True),
    ("70000", "The profit is $70,000.", True),
    ("18", "#### 18", True),
    ("18", "First I got \\boxed{5}, but rechecking: \\boxed{18}", True),
    ("5", "First I got \\boxed{5}, but rechecking: \\boxed{18}", False),
    ("18", "\\boxed{\\$18.00}", True),
    ("18", "\\boxed{18 \\text{ dollars}}", True),
    ("18", "\\boxed{2 \\times 9 = 18}", True),
    ("18", "The answer is 18 because 9 * 2 = 18.", True),
    ("18", "The answer is 17.", False),
    ("18", "**Final Answer:** 18", True),
    ("0.5", "\\boxed{\\frac{1}{2}}", True),
    ("0.5", "The answer is 1/2.", True),
    ("0.5", "\\boxed{\\dfrac12}", True),
    ("-3", "So x = -3", True),
    ("2", "The range is 3-5, so 5-3 = 2", True),
    ("18", CODE_THEN_OUTPUT, True),
    ("18", CODE_ONLY, False),  # code without its output states no answer
    ("18", "```python\neggs = 16 - 3 - 4\nprint(eggs * 2)  # Output: 18\n```", True),
    ("18", "```python\n>>> print(9 * 2)\n18\n```", True),
    ("18", "```python\n# Compute the result\nresult = 9 * 2\n```", False),
    ("18", "", False),
    ("18", "I cannot solve this.", False),
    ("18", "\\boxed{}", False),
    ("18", "\\boxed{\\text{eighteen}} but 18 in digits", False),  # a box without a number is unparseable
    ("18", "\\boxed{18", True),  # an unclosed box is ignored; the last number counts
    ("100", "That is 100%.", True),
    # a box with two candidates or an expression is never read as its first number
    ("3", "\\boxed{3 \\text{ or } 4}", False),
    ("3", "\\boxed{3 + 4}", False),
    ("7", "\\boxed{3 + 4}", True),
    ("2", "\\boxed{\\sqrt{2}}", False),
    # "final answer" without "is" or ":" is a plan, not a marker; a "Final Answer" heading is one
    ("6", "To get the final answer we multiply 6 by 3.\n6*3 = 18", False),
    ("18", "To get the final answer we multiply 6 by 3.\n6*3 = 18", True),
    ("18", "### Final Answer\nThe total is 18 dollars for 3 days.", True),
]


@pytest.mark.parametrize(("gold", "text", "correct"), GSM8K_CASES)
def test_gsm8k_scoring(gold: str, text: str, correct: bool) -> None:
    assert get("gsm8k").score(Example(id="t", question="q", answer=gold), text) is correct


AMC_CASES = [
    ("27", "\\boxed{27}", True),
    ("27", "\\boxed{27.0}", True),
    ("27", "\\boxed{28}", False),
    ("-1", "\\boxed{-1}", True),
    ("-1", "The answer is $-1$.", True),
    ("-1", "\\boxed{1}", False),
    ("1625", "\\boxed{1,625}", True),
    ("36", "Thus $x+y = 36$.", True),
    ("36", "Thus $x+y = 36$. Also $x = 27$ and $y = 9$.", False),  # the last number is the answer
    ("45", "The angle is $45^\\circ$.", True),
    ("45", "\\boxed{45^{\\circ}}", True),
    ("3", "Final answer: \\(3\\)", True),
    ("3", "final answer is $\\frac{6}{2}$", True),
    ("5", "", False),
    ("5", "no idea", False),
    ("5", "\\boxed{4}\n\\boxed{5}", True),
    ("4", "\\boxed{4}\n\\boxed{5}", False),
]


@pytest.mark.parametrize(("gold", "text", "correct"), AMC_CASES)
def test_amc_scoring(gold: str, text: str, correct: bool) -> None:
    assert get("amc23").score(Example(id="t", question="q", answer=gold), text) is correct


AIME_CASES = [
    ("25", "\\boxed{025}", True),
    ("25", "\\boxed{25}", True),
    ("25", "The answer is 025.", True),
    ("25", "\\boxed{25.0}", True),
    ("25", "\\boxed{26}", False),
    ("204", "So the walk takes $\\boxed{204}$ minutes.", True),
    ("0", "\\boxed{000}", True),
    ("0", "\\boxed{0}", True),
    ("999", "\\boxed{999}", True),
    ("1", "\\boxed{1001}", False),  # out of 0-999: unparseable
    ("25", "\\boxed{25.5}", False),
    ("25", "\\boxed{-25}", False),
    ("25", "", False),
    ("25", "garbage", False),
    ("25", "\\boxed{5} no, \\boxed{25}", True),
    ("5", "\\boxed{5} no, \\boxed{25}", False),
    ("73", "```python\nprint(73)\n```\n```output\n73\n```", True),
]


@pytest.mark.parametrize(("gold", "text", "correct"), AIME_CASES)
def test_aime_scoring(gold: str, text: str, correct: bool) -> None:
    assert get("aime24").score(Example(id="t", question="q", answer=gold), text) is correct


@pytest.mark.parametrize(
    ("text", "expected"),
    [("\\boxed{025}", "25"), ("\\boxed{1000}", None), ("\\boxed{7.5}", None), ("", None), ("Answer: 7", "7")],
)
def test_aime_extract(text: str, expected: str | None) -> None:
    assert get("aime24").extract(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\\boxed{18.00}", "18"),
        ("$1,000", "1000"),
        ("\\frac{1}{2}", "0.5"),
        ("1/3", "1/3"),
        ("-0.250", "-0.25"),
        ("no number", None),
        ("", None),
    ],
)
def test_extract_is_canonical(text: str, expected: str | None) -> None:
    assert get("gsm8k").extract(text) == expected


BOX_CASES = [
    # one number, with units, signs, separators
    ("\\$5", "5"),
    ("5.", "5"),
    ("x = 3", "3"),
    ("$18.00", "18"),
    ("50\\%", "50"),
    ("05", "5"),
    ("45°", "45"),
    ("120 \\text{ ft}^2", "120"),
    ("- 5", "-5"),
    ("-\\frac{1}{2}", "-0.5"),
    ("1{,}000", "1000"),
    ("1\\,000", "1000"),
    ("1,\\!000", "1000"),
    ("1 000", "1000"),
    ("\\$1{,}250.50", "1250.5"),
    # arithmetic expressions, evaluated exactly
    ("2^{10}", "1024"),
    ("2 \\times 6", "12"),
    ("5-3", "2"),
    ("1.5 \\times 10^6", "1500000"),
    ("18 = 20 - 2", "18"),
    ("(2 + 1) \\cdot 3", "9"),
    # hedges and anything else: no answer
    ("3 \\text{ or } 4", None),
    ("3, 4", None),
    ("3,4", None),
    ("x = 3 \\text{ or } x = 4", None),
    ("3 \\frac{1}{2}", None),
    ("\\sqrt{2}", None),
    ("2\\pi", None),
    ("5!", None),
    ("\\frac{1}{0}", None),
]


@pytest.mark.parametrize(("box", "expected"), BOX_CASES)
def test_boxed_number(box: str, expected: str | None) -> None:
    assert get("gsm8k").extract(f"So \\boxed{{{box}}}.") == expected


@pytest.mark.parametrize(("box", "expected"), [("025", "25"), ("\\frac{50}{2}", "25"), ("5^2", "25"), ("- 25", None)])
def test_aime_reads_boxed_expressions(box: str, expected: str | None) -> None:
    assert get("aime24").extract(f"\\boxed{{{box}}}") == expected


def test_arithmetic_is_exact_and_bounded() -> None:
    assert arith.evaluate("1/3 + 1/6") == Fraction(1, 2)
    assert arith.evaluate("2^-1") == Fraction(1, 2)
    assert arith.evaluate("-2^2") == -4
    assert arith.evaluate("2^3^2") == 512
    for refused in ["10^10^10", "2^0.5", "1/0", "x + 1", "3 4", "(1", "1 +", "", "(" * 5000 + "1" + ")" * 5000]:
        assert arith.evaluate(refused) is None, refused


@pytest.mark.parametrize(
    ("a", "b"), [("18.00", "18"), ("$18", "18"), ("1,000", "1000"), ("0.5", "1/2"), ("50%", "50")]
)
def test_answer_key_groups_equal_numbers(a: str, b: str) -> None:
    for name in ("gsm8k", "amc23"):
        assert get(name).answer_key(a) == get(name).answer_key(b)
    assert get("gsm8k").answer_key("18") != get("gsm8k").answer_key("19")
    assert get("aime24").answer_key("025") == get("aime24").answer_key("25") == "25"


def test_boxed_contents_match_nested_braces() -> None:
    text = "\\boxed{\\frac{1}{2}} and \\fbox{x^{2}} then \\boxed{{a}{b}}"
    assert numeric.boxed_contents(text) == ["\\frac{1}{2}", "x^{2}", "{a}{b}"]
    assert numeric.last_boxed("no box") is None


def test_parse_exact_rejects_words_and_division_by_zero() -> None:
    assert numeric.parse_exact("18 dollars.") == 18
    assert numeric.parse_exact("3/0") is None
    assert numeric.parse_exact("x + 1") is None
    assert numeric.parse_exact("1 2") is None
    assert numeric.parse_exact("a" * 5000 + "!") is None  # no catastrophic backtracking


def test_canonical_spelling() -> None:
    spelled = [numeric.canonical(Fraction(n, d)) for n, d in [(18, 1), (1, 2), (1, 3), (-5, 4)]]
    assert spelled == ["18", "0.5", "1/3", "-1.25"]


def misscored(name: str, data_dir: str | None) -> tuple[list[str], list[str]]:
    """The test questions of ``name`` whose gold answer, boxed, scores wrong, and those where gold + 1 scores right."""
    bench = get(name)
    examples = bench.load("test", data_dir=data_dir)
    wrong = [ex.id for ex in examples if not bench.score(ex, f"The final answer is $\\boxed{{{ex.answer}}}$.")]
    return wrong, [ex.id for ex in examples if bench.score(ex, f"\\boxed{{{int(ex.answer) + 1}}}")]


@pytest.mark.needs_split("gsm8k/test")
def test_every_gsm8k_gold_answer_scores_correct(data_dir: str | None) -> None:
    assert misscored("gsm8k", data_dir) == ([], [])


@pytest.mark.needs_data_folder("no package ships AIME or AMC, whose real gold answers it checks")
def test_every_competition_gold_answer_scores_correct(data_dir: str | None) -> None:
    for name in ("aime24", "amc23"):
        assert misscored(name, data_dir) == ([], []), name
