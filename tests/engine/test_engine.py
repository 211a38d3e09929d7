"""The round loop on the scripted backend: call counts per action, concede, early stop, accounting."""

import hashlib
from dataclasses import replace

import numpy as np
import pytest

from deliberation import benchmarks
from deliberation.backends.scripted import ScriptedBackend
from deliberation.benchmarks.answers import BenchmarkAnswers
from deliberation.config import EngineConfig
from deliberation.engine.loop import AgentRecord, act, make_context, request_seed, run_episode
from deliberation.engine.spec import MethodSpec
from deliberation.policy.rules import ConstantPolicy
from deliberation.actions import Action
from deliberation.types import Completion

BENCH = benchmarks.get("gsm8k")


@pytest.fixture(scope="module")
def examples():
    return BENCH.load("test", limit=12)


@pytest.fixture()
def backend():
    return ScriptedBackend(benchmark="gsm8k", answers=BenchmarkAnswers)


def ctx_for(example, backend, action=Action.PERSIST, rounds=2, confidence=False, early_stop=False, agents=3):
    spec = MethodSpec(name="t", policy=ConstantPolicy(action), confidence=confidence)
    cfg = EngineConfig(agents=agents, rounds=rounds, early_stop=early_stop)
    return make_context(example, backend, BENCH, cfg, spec)


def test_persist_makes_no_llm_call(examples, backend):
    ep = run_episode(ctx_for(examples[0], backend, Action.PERSIST), np.random.default_rng(0))
    assert backend.calls == 3  # round 0 only
    later = [t for t in ep.turns if t.round > 0]
    assert len(later) == 6 and all(t.llm_calls == 0 and t.completion_tokens == 0 for t in later)
    first = {t.agent: t.answer for t in ep.turns if t.round == 0}
    assert all(t.answer == first[t.agent] for t in later)


def test_refine_makes_exactly_one_call_per_agent(examples, backend):
    ep = run_episode(ctx_for(examples[1], backend, Action.REFINE, rounds=1), np.random.default_rng(0))
    assert backend.calls == 6
    assert [t.llm_calls for t in ep.turns if t.round == 1] == [1, 1, 1]


def test_persisting_agents_make_no_critic_calls_after_round_0(examples, backend):
    ep = run_episode(ctx_for(examples[2], backend, Action.PERSIST, confidence=True), np.random.default_rng(0))
    assert backend.calls == 6  # 3 answers + 3 critic calls in round 0, nothing after
    assert all(t.confidence is not None for t in ep.turns)


def test_concede_adopts_the_supported_peer_answer_without_a_call(examples, backend):
    ctx = ctx_for(examples[0], backend)
    recs = [AgentRecord("x \\boxed{5}", "5", 0.9, 10, False), AgentRecord("y \\boxed{7}", "7", 0.3, 10, False),
            AgentRecord("z \\boxed{7}", "7", 0.2, 10, False)]
    acted = act(ctx, recs, [Action.CONCEDE] * 3, 1)
    new = acted.records
    assert backend.calls == 0 and acted.calls == [[], [], []]
    assert [r.key for r in new] == ["7", "5", "5"]  # 0 joins the pair; 1 and 2 have one other answer
    assert new[0].text == recs[1].text and new[0].changed and new[0].confidence == 0.3


def test_concede_without_a_different_peer_keeps_the_answer(examples, backend):
    recs = [AgentRecord("a \\boxed{5}", "5", 0.9, 10, False)] * 3
    new = act(ctx_for(examples[0], backend), recs, [Action.CONCEDE] * 3, 1).records
    assert [r.key for r in new] == ["5"] * 3 and not any(r.changed for r in new)


class Unanimous:
    """Every agent gives the same answer: consensus after round 0."""

    name, model, supports_logprobs = "fixed", "fixed", False

    def __init__(self):
        self.calls = 0

    def generate(self, requests):
        self.calls += len(requests)
        return [Completion("so \\boxed{42}", 5, 3) for _ in requests]

    def close(self):
        pass


def test_early_stop_on_consensus(examples):
    fixed = Unanimous()
    ep = run_episode(ctx_for(examples[0], fixed, Action.REFINE, early_stop=True), np.random.default_rng(0))
    assert ep.rounds_run == 0 and fixed.calls == 3 and all(t.round == 0 for t in ep.turns)
    ep = run_episode(ctx_for(examples[0], fixed, Action.REFINE, early_stop=False), np.random.default_rng(0))
    assert ep.rounds_run == 2 and fixed.calls == 3 + 3 + 6


def test_token_totals_and_correctness_are_consistent(examples, backend):
    for ex in examples:
        ep = run_episode(ctx_for(ex, backend, Action.REFINE, rounds=2, confidence=True), np.random.default_rng(1))
        assert ep.prompt_tokens == sum(t.prompt_tokens for t in ep.turns) > 0
        assert ep.completion_tokens == sum(t.completion_tokens for t in ep.turns) > 0
        for t in ep.turns:
            assert t.correct == BENCH.score(ex, t.text)
        final = [t for t in ep.turns if t.round == max(x.round for x in ep.turns)]
        holder = next((t for t in final if t.answer == ep.final_answer), final[0])
        assert ep.correct == BENCH.score(ex, holder.text)


def test_same_seed_same_episode(examples):
    def once():
        backend = ScriptedBackend(benchmark="gsm8k", answers=BenchmarkAnswers)
        ctx = ctx_for(examples[3], backend, Action.REFINE, confidence=True)
        return replace(run_episode(ctx, np.random.default_rng(5)), wall_seconds=0.0)

    assert once() == once()


class Timed:
    """The scripted backend with a made-up latency per completion: 1 s for the first of a batch, then 2 s."""

    def __init__(self, inner):
        self.inner, self.batches = inner, 0
        self.name, self.model, self.supports_logprobs = inner.name, inner.model, inner.supports_logprobs

    def generate(self, requests):
        self.batches += 1
        outs = self.inner.generate(requests)
        return [replace(c, latency_s=1.0 if i == 0 else 2.0) for i, c in enumerate(outs)]


def test_generation_seconds_sum_the_slowest_completion_of_each_batch(examples, backend):
    timed = Timed(backend)
    ep = run_episode(ctx_for(examples[3], timed, Action.REFINE, confidence=True), np.random.default_rng(0))
    assert timed.batches == 6  # answers and critics of rounds 0, 1, 2
    assert ep.generation_seconds == 6 * 2.0


def test_request_seeds_differ_for_every_agent_past_sixteen():
    seeds = [request_seed(0, "gsm8k/test/0", agent, 0) for agent in range(40)]
    assert len(set(seeds)) == 40
    assert [s % 16 for s in seeds] == [a % 16 for a in range(40)]  # the scripted backend's agent identity
    # agents 0-15 keep the seeds of the original packing, so existing response caches still serve them
    base = int.from_bytes(hashlib.sha256(b"0:gsm8k/test/0:0").digest()[:4], "big") % (1 << 26) * 16
    assert seeds[:16] == [base + a for a in range(16)]
