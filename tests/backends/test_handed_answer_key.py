"""The backends layer knows no dataset: the scripted simulator answers from an answer key whoever builds it
hands in (``backends.HANDED``), never one it finds by importing the benchmarks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deliberation import backends
from deliberation.backends import HANDED, backend_options, check_options
from deliberation.benchmarks import get as get_benchmark
from deliberation.benchmarks.answers import make_backend
from deliberation.errors import DelibError
from deliberation.types import Example, GenerationRequest, Keyed, Message, Purpose, RequestKind


class OneQuestion:
    """An answer key holding one question whose gold is 42, scored by exact text; ``ASKED`` keeps what every
    key built from it was asked."""

    ASKED: list[str] = []

    def __init__(self, benchmark: str | None, data_dir: str | None) -> None:
        pass

    def find(self, question: str) -> Keyed:
        self.ASKED.append(question)
        return Keyed(Example("q/0", question, "42"), lambda example, text: text.rstrip().endswith("{42}$."))


def request(question: str, seed: int) -> GenerationRequest:
    return GenerationRequest((Message("user", question),), seed=seed,
                             purpose=Purpose(RequestKind.ANSWER, "q/0", question, 0))


def test_a_scripted_backend_built_without_a_key_is_one_line_naming_the_fix():
    with pytest.raises(DelibError, match="given none: build it with deliberation.make_backend") as err:
        backends.make_backend("scripted")
    assert len(str(err.value).splitlines()) == 1


def test_the_key_is_not_an_option_a_user_sets():
    assert "answers" in HANDED and "answers" not in backend_options("scripted")
    with pytest.raises(DelibError, match="takes no option answers"):
        check_options("scripted", {"answers": "gsm8k"})


def test_the_simulator_answers_from_the_key_it_is_handed():
    """Any key works, datasets or not: the gold comes from the key, and so does the scoring; the public
    builder takes a key of one's own too."""
    for build in (backends.make_backend, make_backend):
        OneQuestion.ASKED.clear()
        backend = build("scripted", answers=OneQuestion)
        texts = [c.text for c in backend.generate([request("What is six times seven?", s) for s in range(40)])]
        right = [t for t in texts if t.endswith("\\boxed{42}$.")]
        assert 0 < len(right) < len(texts)  # agents are sometimes right, and right means the key's gold
        assert OneQuestion.ASKED == ["What is six times seven?"] * 40  # every request looked its question up


SRC = Path(__file__).resolve().parents[2] / "src" / "deliberation"
BUILDS = re.compile(r"\bbackends\.make_backend\("  # a call through the module, or the name imported
                    r"|^from deliberation\.backends import (?:\([^)]*|[^\n]*)\bmake_backend\b", re.M)


def test_every_command_builds_its_backends_through_the_one_that_hands_the_key_in():
    """Only the builder that hands the benchmarks' key in (benchmarks/answers.py) and a team (which passes it
    on to its members) call the backends layer's builder; a scripted backend built directly is handed one."""
    callers = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if BUILDS.search(p.read_text()))
    assert callers == ["backends/team.py", "benchmarks/answers.py"]
    direct = [str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
              for line in p.read_text().splitlines() if "ScriptedBackend(" in line and "answers=" not in line
              and "class " not in line]
    assert not direct, direct


@pytest.mark.needs_split("gsm8k/test")
def test_the_default_key_is_the_benchmarks():
    bench = get_benchmark("gsm8k")
    example = bench.load("test", 1)[0]
    completions = make_backend("scripted").generate([request(bench.format_question(example), s) for s in range(30)])
    scores = {bench.score(example, c.text) for c in completions}
    assert scores == {True, False}  # its gold is the benchmark's: some agents are right, some are not
