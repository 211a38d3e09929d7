"""The oracle (methods/oracle.py): per question the best joint round-1 action in hindsight, correct first,
then fewest tokens, then the cheapest actions; it spends one round 0 and one REFINE per agent."""

from __future__ import annotations

from dataclasses import replace

from deliberation import benchmarks, methods
from deliberation.config import EngineConfig
from deliberation.engine.loop import example_rng, make_context, run_episode
from deliberation.backends.scripted import ScriptedBackend
from deliberation.benchmarks.answers import BenchmarkAnswers
from deliberation.methods.base import MethodConfig
from deliberation.methods.oracle import SPEC, best_episode, candidates, one_round, tokens
from deliberation.policy.rules import JointActions
from deliberation.actions import Action
from deliberation.types import Episode, Turn

BENCH = benchmarks.get("gsm8k")
EXAMPLES = BENCH.load("test", limit=20)


def episode(correct: bool, spent: int) -> Episode:
    return Episode("q", "oracle", "1", correct, (Turn(0, 0, None, "1", "t", None, spent, 0, 1),))


def test_best_episode_prefers_correct_then_fewer_tokens_then_the_earliest_candidate():
    wrong_cheap, right_dear, right_cheap, right_cheap_later = (episode(False, 10), episode(True, 90),
                                                               episode(True, 50), episode(True, 50))
    assert best_episode([wrong_cheap, right_dear, right_cheap, right_cheap_later]) is right_cheap
    assert best_episode([wrong_cheap, episode(False, 5)]).prompt_tokens == 5
    assert candidates(2)[:3] == [(Action.PERSIST, Action.PERSIST), (Action.PERSIST, Action.CONCEDE),
                                 (Action.PERSIST, Action.REFINE)] and len(candidates(3)) == 27


def every_candidate(example, backend, engine) -> list[Episode]:
    """Each joint action played out by the engine on its own (no oracle code but the spec and engine)."""
    return [run_episode(make_context(example, backend, BENCH, one_round(engine), replace(SPEC, policy=JointActions(j))),
                        example_rng(engine.seed, example.id)) for j in candidates(engine.agents)]


def test_the_oracle_is_the_best_of_every_joint_action_played_alone():
    backend, engine = ScriptedBackend(benchmark="gsm8k", answers=BenchmarkAnswers), EngineConfig()
    oracle = methods.get("oracle")
    for ex in EXAMPLES:
        got = oracle.run(ex, backend, MethodConfig(engine=engine), example_rng(engine.seed, ex.id))
        played = every_candidate(ex, backend, engine)
        best = min(tokens(e) for e in played if e.correct == any(p.correct for p in played))
        assert got.correct == any(p.correct for p in played) and tokens(got) == best
        assert got.rounds_run == 1 and got.method == "oracle"


def test_the_oracle_beats_every_constant_and_calls_each_request_once():
    calls: list[int] = []
    backend = ScriptedBackend(benchmark="gsm8k", answers=BenchmarkAnswers)
    original = backend.generate
    backend.generate = lambda requests: calls.append(len(requests)) or original(requests)
    cfg = MethodConfig(engine=EngineConfig(rounds=1, early_stop=False))
    oracle = [methods.get("oracle").run(ex, backend, cfg, example_rng(0, ex.id)).correct for ex in EXAMPLES]
    assert sum(calls) <= len(EXAMPLES) * 4 * 3  # round 0, its critic, each REFINE and its critic, per agent
    for constant in ("always-persist", "always-refine", "always-concede"):
        right = [methods.get(constant).run(ex, backend, cfg, example_rng(0, ex.id)).correct for ex in EXAMPLES]
        assert all(o or not r for o, r in zip(oracle, right))
    assert sum(oracle) > sum(methods.get("always-persist").run(ex, backend, cfg, example_rng(0, ex.id)).correct
                             for ex in EXAMPLES)
