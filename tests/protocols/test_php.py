"""PHP's stopping rule and hints, on a backend that answers a set sequence: two consecutive equal answers
stop it, every earlier answer is a hint (oldest first, repeats kept), an unparseable answer neither hints nor
agrees, and the cap ends a question that never settles."""

from __future__ import annotations

from typing import Sequence

import pytest

from deliberation.config import EngineConfig
from deliberation.errors import DelibError
from deliberation.methods import run_method
from deliberation.methods.options import MethodOptions
from deliberation.runs.directory import Summary, summarize
from deliberation.types import Completion, Example, GenerationRequest, from_json, to_json

EXAMPLE = Example("q1", "What is 6 times 7?", "42")


class Sequenced:
    """Answers the i-th request with the i-th of ``answers`` (None: no answer in the text), keeping requests."""

    name, model, supports_logprobs, cache_scope = "sequenced", "m", False, "m"

    def __init__(self, answers: Sequence[str | None]) -> None:
        self.answers, self.requests = list(answers), []

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        out = []
        for r in requests:
            answer = self.answers[len(self.requests)]
            self.requests.append(r)
            text = "I cannot tell." if answer is None else f"Reasoning. The final answer is $\\boxed{{{answer}}}$."
            out.append(Completion(text, 20, 10))
        return out


def run(answers: Sequence[str | None], **options) -> tuple[object, Sequenced]:
    backend = Sequenced(answers)
    episode = run_method("php", EXAMPLE, backend, "gsm8k", EngineConfig(), **options)
    return episode, backend


def user_text(request: GenerationRequest) -> str:
    return request.messages[-1].content


def test_two_consecutive_equal_answers_stop_it_with_every_earlier_answer_as_hint():
    episode, backend = run(["40", "41", "40", "42", "42", "9"])
    assert [t.answer for t in episode.turns] == ["40", "41", "40", "42", "42"]
    assert episode.final_answer == "42" and episode.correct and episode.rounds_run == 4 and episode.capped is False
    assert "Hint" not in user_text(backend.requests[0])
    assert "What is 6 times 7? (Hint: The answer is near to 40).\n\n" in user_text(backend.requests[1])
    assert "7? (Hint: The answer is near to 40, 41, 40, 42).\n\n" in user_text(backend.requests[4])  # then the format
    assert len({r.seed for r in backend.requests}) == 5  # interaction k is its own round's seed


def test_an_unparseable_answer_is_no_hint_and_never_agrees():
    episode, backend = run([None, None, "7", "7"])
    assert [t.answer for t in episode.turns] == [None, None, "7", "7"]
    assert "Hint" not in user_text(backend.requests[1])
    assert "(Hint: The answer is near to 7)." in user_text(backend.requests[3])
    assert episode.final_answer == "7" and not episode.correct


@pytest.mark.parametrize("cap", [2, 5])
def test_the_cap_ends_a_question_that_never_settles_with_its_last_answer(cap):
    episode, backend = run([str(i) for i in range(20)], php_max_calls=cap)
    assert len(backend.requests) == cap and episode.final_answer == str(cap - 1) and episode.rounds_run == cap - 1
    assert episode.capped is True


def test_answers_that_agree_at_the_last_call_the_cap_allows_were_not_ended_by_the_cap():
    episode, backend = run(["1", "2", "2", "3"], php_max_calls=3)
    assert len(backend.requests) == 3 and episode.final_answer == "2" and episode.capped is False


def test_a_runs_summary_counts_the_questions_the_cap_ended_and_other_methods_record_no_count():
    ended, _ = run([str(i) for i in range(20)], php_max_calls=2)
    settled, _ = run(["42", "42"])
    summary = summarize([ended, settled, ended], "php", "gsm8k", "test")
    assert summary.capped == 2 and summary.notes == ", its cap ended 2 of 3 questions"
    assert from_json(Summary, to_json(summary)).capped == 2
    cot = run_method("cot", EXAMPLE, Sequenced(["42"]), "gsm8k", EngineConfig())
    other = summarize([cot], "cot", "gsm8k", "test")
    assert cot.capped is None and "capped" not in to_json(cot) and "capped" not in to_json(other)
    assert other.notes == ""


def test_a_cap_below_two_is_refused():
    with pytest.raises(DelibError, match="--php-max-calls must be"):
        MethodOptions(php_max_calls=1)


def test_a_math_hint_is_the_answer_as_stated_and_agreement_compares_keys():
    """The hint shows the LaTeX the response boxed (the reference hints cleaned answer strings), while two
    answers written differently but equal (\\frac{1}{2} and 0.5) agree and stop it."""
    backend = Sequenced(["\\frac{1}{2}", "0.5", "9"])
    episode = run_method("php", Example("m1", "Half of one?", "\\frac{1}{2}"), backend, "math", EngineConfig())
    assert "Half of one? (Hint: The answer is near to \\frac{1}{2})." in user_text(backend.requests[1])
    assert episode.rounds_run == 1 and episode.correct
