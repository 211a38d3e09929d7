"""HumanEval: code extraction, program assembly, execution of the canonical solutions, pass@k."""

from __future__ import annotations

import math

import pytest

from deliberation.benchmarks import get
from deliberation.benchmarks.sandbox import run as sandbox
from deliberation.benchmarks.humaneval import HumanEval, extract, checks, pass_at_k, solution
from deliberation.types import Example

BODY = "    return number % 1.0\n"
SIGNATURE = "def truncate_number(number: float) -> float:\n"
FULL = SIGNATURE + BODY
FENCED = f"Here is the solution:\n\n```python\n{FULL}```\n\nIt keeps the fractional part."
USAGE = "```python\nprint(truncate_number(3.5))\n```"

# Walks up the frames to a local named like a marker and prints it as the runner would, then exits 0.
MARKER = (
    "import os, sys\nframe = sys._getframe()\nwhile frame is not None:\n"
    "    for name in ('token', 'marker', 'sentinel'):\n"
    "        if isinstance(frame.f_locals.get(name), str):\n"
    "            os.write(1, ('\\n' + frame.f_locals[name] + '\\n').encode())\n            os._exit(0)\n"
    "    frame = frame.f_back\n"
)

CASES = [
    ("canonical body", BODY, True),
    ("body in a fence", f"```python\n{BODY}```", True),
    ("full function", FULL, True),
    ("fenced full function with prose", FENCED, True),
    ("py fence tag", f"```py\n{FULL}```", True),
    ("unclosed fence (cut off)", f"```python\n{FULL}", True),
    ("function block then a usage block", f"{FENCED}\n\nUsage:\n{USAGE}", True),
    ("usage block then function block", f"{USAGE}\n\n{FENCED}", True),
    ("helper import in body", "    import math\n    return number - math.floor(number)\n", True),
    ("main guard is not run", f"```python\n{FULL}\nif __name__ == '__main__':\n    input()\n```", True),
    ("wrong body", "    return number\n", False),
    ("wrong full function", f"```python\n{SIGNATURE}    return 0.0\n```", False),
    ("other function name", "```python\ndef helper(x):\n    return x % 1.0\n```", False),
    ("syntax error", f"```python\n{SIGNATURE}    return number %\n```", False),
    ("sys.exit(0) before the tests", "    import sys\n    sys.exit(0)\n", False),
    ("exit at import time", "```python\nimport sys\nsys.exit(0)\n" + FULL + "```", False),
    ("os._exit(0)", "    import os\n    os._exit(0)\n", False),
    ("infinite loop", "    while True:\n        pass\n", False),
    ("__eq__ always True", "```python\nclass Yes:\n    def __eq__(self, other):\n        return True\n"
     "    def __sub__(self, other):\n        return 0\n" + SIGNATURE + "    return Yes()\n```", False),
    ("prints the success marker found by introspection", f"```python\n{SIGNATURE}    return 0.0\n{MARKER}```", False),
    ("prose only", "The fractional part is what remains after removing the integer part.", False),
    ("a lone word", "garbage", False),
    ("empty", "", False),
]


NO_CODE = {"prose only", "a lone word", "empty"}


@pytest.fixture(scope="module")
def truncate(data_dir: str | None) -> Example:
    return get("humaneval").load("test", limit=3, data_dir=data_dir)[2]


@pytest.mark.parametrize(("label", "text", "correct"), CASES, ids=[c[0] for c in CASES])
def test_humaneval_scoring(label: str, text: str, correct: bool, truncate: Example) -> None:
    bench = HumanEval()
    bench.limits = sandbox.Limits(timeout_s=3.0)
    assert truncate.meta["entry_point"] == "truncate_number"
    assert (bench.extract_for(truncate, text) is None) == (label in NO_CODE)  # hostile code does get run
    assert bench.score(truncate, text) is correct, label


def test_score_many_keeps_order_and_marks_missing_code_wrong(truncate: Example) -> None:
    texts = [BODY, "no code here", "    return number\n", FENCED]
    assert HumanEval().score_many([truncate] * 4, texts) == [True, False, False, True]
    with pytest.raises(ValueError, match="score_many got 1 examples but 0 texts"):
        HumanEval().score_many([truncate], [])


def test_every_canonical_solution_passes(data_dir: str | None) -> None:
    bench = get("humaneval")
    examples = bench.load("test", data_dir=data_dir)
    results = bench.score_many(examples, [ex.answer for ex in examples])
    assert [ex.id for ex, ok in zip(examples, results) if not ok] == []


def test_swapped_solutions_fail(data_dir: str | None) -> None:
    """The tests do check something: each problem given the next problem's canonical body fails."""
    bench = get("humaneval")
    examples = bench.load("test", limit=12, data_dir=data_dir)
    assert not any(bench.score_many(examples, [ex.answer for ex in examples[1:] + examples[:1]]))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"```python\n{FULL}```", FULL),
        (BODY, BODY),
        ("no code at all.", None),
        ("42", None),
        ("", None),
        (f"```python\nx = 1\n```\n```python\n{FULL}```\n```python\ny = 2\n```", FULL),
        (f"```python\n{FULL}```\n```output\n0.5\n```\nDone.", FULL),
        ("```output\n0.5\n```\nreturn 1", None),
    ],
)
def test_extract_returns_the_program(text: str, expected: str | None) -> None:
    assert extract(text) == expected


def test_extract_prefers_the_block_defining_the_entry_point() -> None:
    text = f"```python\n{FULL}```\n```python\ndef check_it():\n    return truncate_number(1.5)\n```"
    assert extract(text, "truncate_number") == FULL
    assert get("humaneval").extract(text) != FULL  # without the example, the last defining block


def test_solution_continues_a_body_or_replaces_a_stub_and_the_tests_stay_outside(truncate: Example) -> None:
    assert solution(truncate, BODY) == truncate.question + BODY
    as_function = solution(truncate, FULL)
    assert as_function.count("def truncate_number") == 2 and truncate.meta["test"] not in as_function
    trusted = checks(truncate)
    assert trusted.setup == truncate.question and trusted.entry == "truncate_number"
    assert trusted.code.startswith(truncate.meta["test"]) and trusted.code.endswith("check(truncate_number)\n")


@pytest.mark.parametrize(
    ("n", "c", "k"),
    [(10, 0, 1), (10, 3, 1), (10, 3, 5), (10, 8, 5), (200, 13, 10), (5, 5, 5)],
)
def test_pass_at_k_matches_the_combinatorial_formula(n: int, c: int, k: int) -> None:
    expected = 1.0 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_edges() -> None:
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(10, 0, 10) == 0.0
    assert pass_at_k(10, 1, 10) == 1.0
    for bad in [(10, 11, 1), (10, 3, 0), (10, 3, 11), (10, -1, 1)]:
        with pytest.raises(ValueError, match="pass_at_k needs 0 <= c <= n and 1 <= k <= n"):
            pass_at_k(*bad)
