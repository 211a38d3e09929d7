"""Each method's call range (methods/calls.py, what ``delib experiment --plan`` multiplies) holds the requests
its episodes send: every registered method that runs at its defaults, on scripted GSM8K questions whose
agents sometimes agree at once and sometimes do not. Some methods both stop early and run in full on them;
others make the same number of calls on each of them, so only that point of their range is checked here."""

from dataclasses import replace

import pytest

from deliberation import benchmarks, methods
from deliberation.benchmarks.answers import make_backend
from deliberation.config import EngineConfig
from deliberation.methods.base import MethodConfig
from deliberation.methods.calls import Calls, exactly, loop_calls
from deliberation.errors import DelibError
from registered_methods import AT_DEFAULTS

QUESTIONS = benchmarks.get("gsm8k").load("test", limit=8)


def calls_per_question(method: str, engine: EngineConfig, **options) -> list[int]:
    """The requests that reach the backend for each question (the oracle's episode shows only its best
    candidate's calls; the server answers them all)."""
    backend = make_backend("scripted", benchmark="gsm8k")
    made = []
    for ex in QUESTIONS:
        before = backend.calls
        methods.run_method(method, ex, backend, "gsm8k", engine, **options)
        made.append(backend.calls - before)
    return made


@pytest.mark.parametrize("method", AT_DEFAULTS)
def test_every_episode_makes_calls_within_its_methods_range(method):
    engine = EngineConfig(agents=3, rounds=2)
    bounds = methods.get(method).call_bounds(MethodConfig(engine=engine))
    least, most = (a + c for a, c in zip(bounds.answers, bounds.critics))
    made = calls_per_question(method, engine)
    assert all(least <= n <= most for n in made), (bounds, made)


@pytest.mark.parametrize("method, options, expected", [
    ("cot", {}, exactly(1)),
    ("self-consistency", {}, exactly(5)),  # k samples, k = agents
    ("debate", {}, exactly(15)),  # agents x (rounds + 1): it never stops early
    ("dylan", {}, Calls((5, 15))),  # stops once more than 2/3 agree, after round 0 at the earliest
    ("mpdf", {}, Calls((5, 15), (5, 15))),  # every new answer judged by the critic once
    ("mpdf", {"lazy_critic": True}, Calls((5, 15), (0, 15))),
    ("reconcile", {}, Calls((5, 15), (5, 15))),
    ("always-persist", {}, exactly(5)),  # PERSIST and CONCEDE make no call
    ("php", {"php_max_calls": 4}, Calls((2, 4))),  # the base answer and a hinted one at least
    ("aflow-gsm8k", {}, Calls((7, 9))),  # five solutions, an ensemble, a program tried up to 3 times
    ("oracle", {}, exactly(10, 10)),  # round 0 and one REFINE per agent, each judged
])
def test_call_ranges_follow_from_the_options(method, options, expected):
    """5 agents, 2 rounds: numbers a wrong formula would miss."""
    engine = EngineConfig(agents=5, rounds=2)
    assert methods.get(method).call_bounds(MethodConfig(engine=engine, **options)) == expected


def test_debate_makes_exactly_its_calls_and_no_early_stop_changes_the_least():
    engine = EngineConfig(agents=2, rounds=3)
    assert set(calls_per_question("debate", engine)) == {8}
    assert loop_calls(methods.get("dylan").spec(MethodConfig()), replace(engine, early_stop=False)) == exactly(8)


def test_a_graph_method_without_its_graph_says_how_to_make_it():
    with pytest.raises(DelibError, match="delib optimize-graph --method agentprune"):
        methods.get("agentprune").call_bounds(MethodConfig())


def test_a_range_must_be_ordered():
    with pytest.raises(DelibError, match="least <= most"):
        Calls((3, 2))
