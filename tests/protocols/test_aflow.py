"""AFlow's transferred workflows on a backend that answers each operator as told: ScEnsemble returns the
solution whose letter the model names; Programmer runs the model's solve() in the sandbox, retries with the
code and the error shown, returns the last error when no program runs and stops at a reply without code, as
the reference's does; the GSM8K workflow returns the program's output, else (empty) the chosen solution."""

from __future__ import annotations

import re
from typing import Callable, Sequence

import pytest

from deliberation.benchmarks import get
from deliberation.config import EngineConfig
from deliberation.methods import run_method
from deliberation.protocols.aflow import ENSEMBLE, NO_CODE, PROGRAM, letter_of
from deliberation.protocols.program import program_of, run_solve
from deliberation.protocols.workflow import TRANSFERRED, ensemble_calls
from deliberation.types import Completion, Example, GenerationRequest

EXAMPLE = Example("q1", "What is 6 times 7?", "42")


class ByOperator:
    """Answers a Custom call with ``solution(k)``, an ensemble call with ``letter``, a program call with the
    next of ``programs``; keeps the prompts."""

    name, model, supports_logprobs, cache_scope = "ops", "m", False, "m"

    def __init__(self, solution: Callable[[int], str], letter: str, programs: Sequence[str]) -> None:
        self.solution, self.letter, self.programs, self.prompts = solution, letter, list(programs), []

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        out = []
        for r in requests:
            text = r.messages[-1].content
            self.prompts.append(text)
            if text.startswith(ENSEMBLE):
                reply = f"Most say the same.\nLetter: {self.letter}"
            elif text.startswith(PROGRAM):
                reply = self.programs.pop(0)
            else:
                reply = self.solution(len(self.prompts))
            out.append(Completion(reply, 50, 20))
        return out


def run(backend: ByOperator, method: str = "aflow-gsm8k"):
    return run_method(method, EXAMPLE, backend, "gsm8k", EngineConfig())


def solutions(k: int) -> str:
    return f"Work for solution {k}. The final answer is {40 + k}."


GOOD = "```python\ndef solve():\n    return 6 * 7\n```"
BROKEN = "```python\ndef solve():\n    return 6 * undefined_name\n```"
EMPTY = "```python\ndef solve():\n    return ''\n```"


def test_the_gsm8k_workflow_returns_the_programs_output_and_retries_a_broken_program():
    backend = ByOperator(solutions, "C", [BROKEN, GOOD])
    episode = run(backend)
    assert episode.final_answer == "42" and episode.correct
    assert len(episode.turns) == 5 + 1 + 2  # five solutions, the ensemble, two program attempts
    assert "Analysis:\nWork for solution 3." in backend.prompts[6]  # the program sees solution C
    assert "NameError" in backend.prompts[7] and "6 * undefined_name" in backend.prompts[7]  # error and code


def test_when_no_program_runs_the_answer_is_the_last_error_as_the_reference_returns_it():
    episode = run(ByOperator(solutions, "B", [BROKEN] * 3))
    assert len(episode.turns) == 5 + 1 + 3 and not episode.correct  # solution B said 42: not taken
    ran, error = run_solve(program_of(BROKEN))
    assert not ran and "NameError" in error
    assert episode.final_answer == get("gsm8k").extract(error)  # the traceback read as an answer


@pytest.mark.parametrize("fence", ["```", "```python", "```py", "```Python", "``` python", "```python3 "])
def test_a_fenced_block_is_read_however_the_model_tags_it_as_python(fence):
    assert program_of(f"Here:\n{fence}\ndef solve():\n    return 7\n```\ndone") == "def solve():\n    return 7\n"


def test_the_program_is_the_block_that_defines_solve_not_an_output_block_after_it():
    reply = "```python\ndef solve():\n    return 7\n```\nIt prints:\n```\n7\n```"
    assert program_of(reply) == "def solve():\n    return 7\n"


def test_a_block_of_another_language_is_not_read_as_a_program():
    assert program_of("```js\nfunction solve() { return 7 }\n```") is None


def test_a_reply_without_code_ends_the_programmer_at_once():
    episode = run(ByOperator(solutions, "B", ["no code here"]))
    assert len(episode.turns) == 5 + 1 + 1 and episode.final_answer is None  # "No code generated" states none
    assert NO_CODE == "No code generated"


def test_a_program_with_an_empty_value_leaves_the_chosen_solution():
    episode = run(ByOperator(solutions, "B", [EMPTY]))
    assert episode.final_answer == "42" and len(episode.turns) == 5 + 1 + 1  # solution B says 42


def test_a_floats_rounding_error_is_not_a_wrong_answer():
    program = "```python\ndef solve():\n    return 0.1 * 3 * 140\n```"  # 42.00000000000001 in floating point
    episode = run(ByOperator(solutions, "B", [program]))
    assert episode.final_answer == "42" and episode.correct


def test_an_unreadable_letter_chooses_the_first_solution():
    backend = ByOperator(solutions, "Z", [EMPTY])  # Z names no solution
    assert run(backend).final_answer == "41"


@pytest.mark.parametrize("reply, index", [
    ("Most say 42.\nLetter: C", 2), ("**Letter:** B", 1), ("letter: (b)", 1), ("Letter: `D`", 3),
    ("Letter: Solution B", 1), ("The letter is E.", 4), ("Letter: A\n...on reflection, Letter: C", 2),
    ("Letter: C\nLetter: Z", 2),  # Z names no solution: the last letter that does
    ("The letter I choose is B", 1), ("Letter: $\\boxed{B}$", 1), ("Letter: $\\text{C}$", 2), ("Letter: Option B", 1),
    ("The letter of the most frequent solution is C", 2), ("final letter: c", 2), ("**Letter: D**", 3),
    (f"{ENSEMBLE}...\nLetter: B", 1),  # the instruction echoed: its "X" names no solution shown
])
def test_the_ensembles_letter_is_read_however_the_model_writes_it(reply, index):
    assert letter_of(reply, 5) == index


@pytest.mark.parametrize("reply", ["X the letter of a solution holding that answer", "Letter: Z", "no verdict",
                                   "I will write the letter. A majority says 42", "Each letter a solution",
                                   "letter, a solution", "letter: e.g. C"])
def test_a_reply_naming_no_solution_has_no_letter(reply):
    assert letter_of(reply, 5) is None


@pytest.mark.parametrize("value, shown", [
    ("1e16", "10000000000000000"), ("2e-6", "0.000002"), ("-1e23", "-100000000000000000000000"), ("0.5", "0.5"),
    ("__import__('decimal').Decimal('1E+16')", "10000000000000000"), ("__import__('decimal').Decimal('1E-7')",
                                                                      "0.0000001"),
    ("__import__('sympy').Float(1e16)", "10000000000000000"), ("__import__('sympy').Rational(1, 3)", "1/3"),
    ("'ten'", "ten"), ("10**20", "100000000000000000000"), ("True", "True"),
])
def test_a_programs_value_is_never_shown_in_exponent_notation(value, shown):
    assert run_solve(f"def solve():\n    return {value}\n") == (True, shown)


@pytest.mark.parametrize("bench, programs", [("gsm8k", [GOOD]), ("gsm8k", [BROKEN] * 3), ("math", [GOOD]),
                                             ("math", [BROKEN, BROKEN, GOOD]), ("math", ["no code"])])
def test_the_ensembles_call_is_placed_among_the_turns_however_many_tries_the_programmer_took(bench, programs):
    backend = ByOperator(solutions, "B", programs)
    episode = run(backend, f"aflow-{bench}")
    asked = [k for k, p in enumerate(backend.prompts) if p.startswith(ENSEMBLE)]
    shown = len(re.findall(r"^[A-Z]\. ", backend.prompts[asked[0]], re.MULTILINE))  # the solutions, lettered
    assert ensemble_calls(TRANSFERRED[bench], len(episode.turns)) == [(asked[0], shown)] and len(asked) == 1
