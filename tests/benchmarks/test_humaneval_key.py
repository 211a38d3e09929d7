"""HumanEval's execution-based voting key (CodeT-style): programs that behave alike on the prompt's
example calls vote together; the hidden tests are never run for it."""

from __future__ import annotations

import pytest

from deliberation.benchmarks import get, humaneval
from deliberation.benchmarks.sandbox import run as sandbox
from deliberation.benchmarks.humaneval import example_calls, execution_key, text_key
from deliberation.types import Example

PAIRS = "```python\ndef has_close_elements(numbers, threshold):\n{body}```"
DOUBLE_LOOP = """    for i, a in enumerate(numbers):
        for j, b in enumerate(numbers):
            if i != j and abs(a - b) < threshold:
                return True
    return False
"""
SORTED = """    xs = sorted(numbers)
    return any(y - x < threshold for x, y in zip(xs, xs[1:]))
"""


@pytest.fixture(scope="module")
def examples(data_dir: str | None) -> list[Example]:
    return get("humaneval").load("test", data_dir=data_dir)


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    execution_key.cache_clear()


def key(example: Example, text: str) -> str:
    """What the engine does (``engine.answer_key``): key the response with its example."""
    found = get("humaneval").key_for(example, text)
    assert found is not None
    return found


def test_example_calls_come_from_the_prompt(examples: list[Example]) -> None:
    close = examples[0]
    assert example_calls(close.question, "has_close_elements") == (
        "has_close_elements([1.0, 2.0, 3.0], 0.5)", "has_close_elements([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3)")
    digit_sum = next(e for e in examples if e.meta["entry_point"] == "digitSum")  # "digitSum(x) => y" lines
    assert example_calls(digit_sum.question, "digitSum")[:2] == ('digitSum("")', 'digitSum("abAB")')


def test_equivalent_programs_share_a_key_and_different_ones_do_not(examples: list[Example]) -> None:
    close = examples[0]
    a, b = key(close, PAIRS.format(body=DOUBLE_LOOP)), key(close, PAIRS.format(body=SORTED))
    assert PAIRS.format(body=DOUBLE_LOOP) != PAIRS.format(body=SORTED)
    assert a == b and a.startswith("exec:")
    assert key(close, close.answer) == a  # the body-only completion format behaves the same
    assert key(close, PAIRS.format(body="    return False\n")) != a


@pytest.mark.timeout(60)  # a program that is not cut off hangs the key: fail instead of waiting forever
def test_raising_and_looping_programs_get_keys_without_hanging(examples: list[Example],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(humaneval, "KEY_PER_CALL_S", 0.3)
    close = examples[0]
    raising = key(close, PAIRS.format(body="    raise ValueError('no')\n"))
    assert raising == "exec:!ValueError !ValueError"
    looping = key(close, PAIRS.format(body="    while True:\n        pass\n"))
    swallow = "    while True:\n        try:\n            pass\n        except BaseException:\n            pass\n"
    stubborn = key(close, PAIRS.format(body=swallow))
    assert looping == stubborn == "exec:!timeout !timeout"
    assert key(close, PAIRS.format(body="    return {}[0]\n")) == "exec:!KeyError !KeyError"


def test_key_is_deterministic_and_cached(examples: list[Example], monkeypatch: pytest.MonkeyPatch) -> None:
    close = examples[0]
    text = PAIRS.format(body="    print('noise')\n    return {str(x) for x in numbers}\n")
    first = key(close, text)
    execution_key.cache_clear()
    assert key(close, text) == first  # set order does not depend on the interpreter's hash seed
    monkeypatch.setattr(sandbox, "run_program", lambda *a, **k: pytest.fail("the cached key ran again"))
    assert key(close, text) == first


def test_prompt_without_examples_falls_back_to_the_text_key(examples: list[Example],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    decode = next(e for e in examples if e.meta["entry_point"] == "decode_cyclic")
    assert example_calls(decode.question, "decode_cyclic") == ()
    monkeypatch.setattr(sandbox, "run_program", lambda *a, **k: pytest.fail("nothing to run"))
    text = "```python\ndef decode_cyclic(s):\n    return encode_cyclic(encode_cyclic(s))\n```"
    assert key(decode, text) == text_key(get("humaneval").extract_for(decode, text) or "")


def test_unloadable_program_and_plain_text_keep_the_text_key(examples: list[Example]) -> None:
    close = examples[0]
    broken = PAIRS.format(body="    return (\n")
    assert key(close, broken) == text_key(get("humaneval").extract_for(close, broken) or "")
    assert get("humaneval").answer_key("  x = 1  \n") == "x = 1"  # no example attached: text key
    assert get("humaneval").key_for(close, "prose only, no code") is None  # unparseable stays None


def test_hidden_tests_are_never_run_for_the_key(examples: list[Example], monkeypatch: pytest.MonkeyPatch) -> None:
    close = examples[0]
    seen: list[str] = []
    real = sandbox.run_program

    def spy(source: str, limits: sandbox.Limits = sandbox.Limits()) -> sandbox.SandboxResult:
        seen.append(source)
        return real(source, limits)

    monkeypatch.setattr(sandbox, "run_program", spy)
    assert key(close, PAIRS.format(body=SORTED)).startswith("exec:")
    assert len(seen) == 1
    assert "check(" not in seen[0]
    assert str(close.meta["test"]).strip() not in seen[0]
    assert "def check" not in seen[0]
