"""The round loop shared by MPDF and every baseline (DESIGN.md section 1), so comparisons are fair.

Round 0: every agent answers independently (one batch). Rounds 1..R: unless the method's consensus rule
stops early, the method's meta-policy picks PERSIST / REFINE / CONCEDE per agent from the observation,
all REFINE calls go to the backend as one batch, then the critic calls for the refined responses as a
second batch. The team's answer is the vote. Methods differ only in their ``MethodSpec``: the policy, the
update prompt, whether confidence is computed, the stop rule and the vote weighting.

Request seeds: ``request_seed`` packs the agent index into the low 4 bits (the scripted backend reads it as
the agent's identity) above a hash of (run seed, example, round, and agent // 16 from agent 16 on).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Protocol, Sequence

import numpy as np

from deliberation.backends.base import Backend
from deliberation.benchmarks.base import Benchmark
from deliberation.config import EngineConfig
from deliberation.deliberation import confidence as conf_mod
from deliberation.deliberation import prompts
from deliberation.deliberation.consensus import Ballot, support, unanimous, vote
from deliberation.deliberation.state import AgentView, Observation, observe
from deliberation.types import Action, Completion, Episode, Example, GenerationRequest, Message, Turn

UpdatePrompt = Callable[[str, str, Sequence[str], Sequence[float | None]], tuple[Message, ...]]


class MetaPolicy(Protocol):
    """Chooses every agent's meta-action from the observation; returns actions and their log-probs."""

    def decide(self, obs: Observation, rng: np.random.Generator) -> tuple[tuple[Action, ...], tuple[float, ...]]:
        ...


@dataclass(frozen=True)
class MethodSpec:
    """What makes a method: its policy, update prompt, confidence use, stop rule and vote weighting."""

    name: str
    policy: MetaPolicy | None  # None: no deliberation rounds (cot, self-consistency)
    update: UpdatePrompt = lambda q, own, peers, confs: prompts.refine_messages(q, own, peers)
    confidence: bool = False
    stop: Callable[[Sequence[str | None]], bool] = unanimous
    weighted_vote: bool = False


@dataclass(frozen=True)
class AgentRecord:
    """An agent's current response."""

    text: str
    key: str | None
    confidence: float | None
    completion_tokens: int
    truncated: bool
    changed: bool = False

    def view(self) -> AgentView:
        return AgentView(self.key, self.text, self.confidence, self.completion_tokens, self.changed, self.truncated)


@dataclass(frozen=True)
class Context:
    """Everything one episode needs besides the agents' records."""

    example: Example
    question: str  # the question as shown to agents
    backend: Backend
    bench: Benchmark
    cfg: EngineConfig
    spec: MethodSpec
    memo: dict[str, bool] = field(default_factory=dict)  # text -> score, within the episode
    batch_seconds: list[float] = field(default_factory=list)  # per backend call: its slowest completion


def call_backend(ctx: Context, requests: Sequence[GenerationRequest]) -> list[Completion]:
    """Send one batch and note how long it took when generated: the latency of its slowest completion
    (a cached completion keeps the latency it had when first generated)."""
    if not requests:
        return []
    outs = ctx.backend.generate(requests)
    ctx.batch_seconds.append(max(c.latency_s for c in outs))
    return outs


def request_seed(seed: int, example_id: str, agent: int, round_: int) -> int:
    """A reproducible per-request seed with the agent index in the low 4 bits.

    Agents 16 and up also hash ``agent // 16`` into the high bits, so self-consistency with many samples
    never sends two agents the same request (agents 0-15 keep the seeds they always had).
    """
    block = f":{agent // 16}" if agent >= 16 else ""
    digest = hashlib.sha256(f"{seed}:{example_id}:{round_}{block}".encode()).digest()
    return (int.from_bytes(digest[:4], "big") % (1 << 26)) * 16 + agent % 16


def answer_key(ctx: Context, text: str) -> str | None:
    """Canonical answer of a response (None when unparseable)."""
    return ctx.bench.key_for(ctx.example, text)


def record_of(ctx: Context, completion: Completion, changed: bool) -> AgentRecord:
    """Turn a completion into an agent record (confidence filled in later)."""
    return AgentRecord(completion.text, answer_key(ctx, completion.text), None,
                       completion.completion_tokens, completion.finish_reason == "length", changed)


def generate(ctx: Context, messages: Sequence[tuple[Message, ...]], agents: Sequence[int],
             round_: int) -> list[Completion]:
    """One batch of answer requests, one per agent listed."""
    seed = ctx.cfg.seed
    requests = [
        GenerationRequest(m, ctx.cfg.max_tokens, ctx.cfg.temperature, request_seed(seed, ctx.example.id, a, round_))
        for m, a in zip(messages, agents)
    ]
    return call_backend(ctx, requests)


def initial_round(ctx: Context) -> tuple[list[AgentRecord], list[Turn]]:
    """Round 0: every agent answers independently; critic confidence if the method uses it."""
    n = ctx.cfg.agents
    outs = generate(ctx, [prompts.initial_messages(ctx.question)] * n, range(n), 0)
    records = [record_of(ctx, c, True) for c in outs]
    records, critics = score_confidence(ctx, records)
    turns = [_turn(ctx, i, 0, None, records[i], [outs[i], critics[i]]) for i in range(n)]
    return records, turns


def score_confidence(ctx: Context, records: list[AgentRecord]) -> tuple[list[AgentRecord], list[Completion | None]]:
    """Critic calls, one batch, for the records that changed (if the method computes confidence)."""
    todo = [i for i, r in enumerate(records) if r.changed] if ctx.spec.confidence else []
    verbal = ctx.cfg.verbal_confidence or not ctx.backend.supports_logprobs
    reqs = [conf_mod.critic_request(ctx.question, records[i].text, verbal) for i in todo]
    outs = call_backend(ctx, reqs)
    critics: list[Completion | None] = [None] * len(records)
    records = list(records)
    for i, out in zip(todo, outs):
        critics[i] = out
        records[i] = replace(records[i], confidence=conf_mod.read_confidence(out, verbal))
    return records, critics


def concede_target(records: Sequence[AgentRecord], i: int) -> int | None:
    """The peer to concede to: among peers holding a different parseable answer, the one whose answer
    has the most support, then the most confident (DESIGN.md's rule, with support first)."""
    keys = [r.key for r in records]
    peers = [j for j, r in enumerate(records) if j != i and r.key is not None and r.key != records[i].key]
    if not peers:
        return None
    conf = lambda j: -1.0 if records[j].confidence is None else records[j].confidence  # noqa: E731
    return max(peers, key=lambda j: (support(keys, records[j].key), conf(j), -j))


def refine_messages(ctx: Context, records: Sequence[AgentRecord], i: int) -> tuple[Message, ...]:
    """The update prompt of agent i, showing its peers' current solutions."""
    peers = [r for j, r in enumerate(records) if j != i]
    return ctx.spec.update(ctx.question, records[i].text, [p.text for p in peers], [p.confidence for p in peers])


def apply_actions(ctx: Context, records: list[AgentRecord], actions: Sequence[Action],
                  round_: int) -> tuple[list[AgentRecord], list[list[Completion]]]:
    """Execute one round's actions; REFINE calls go out as one batch. Returns new records and the
    completions each agent spent (for token accounting)."""
    refiners = [i for i, a in enumerate(actions) if a is Action.REFINE]
    outs = generate(ctx, [refine_messages(ctx, records, i) for i in refiners], refiners, round_)
    spent: list[list[Completion]] = [[] for _ in records]
    new = [replace(r, changed=False) for r in records]
    for i, out in zip(refiners, outs):
        new[i] = record_of(ctx, out, changed=answer_key(ctx, out.text) != records[i].key)
        spent[i].append(out)
    for i, a in enumerate(actions):
        target = concede_target(records, i) if a is Action.CONCEDE else None
        if target is not None:
            new[i] = replace(records[target], changed=True)
    return new, spent


def deliberation_round(ctx: Context, records: list[AgentRecord], round_: int,
                       rng: np.random.Generator) -> tuple[list[AgentRecord], list[Turn]]:
    """One round: observe, decide, act, re-score confidence of changed responses."""
    obs = observe([r.view() for r in records], round_, ctx.cfg.rounds)
    actions, _ = ctx.spec.policy.decide(obs, rng)
    new, spent = apply_actions(ctx, records, actions, round_)
    new, critics = _rescore(ctx, new, actions)
    turns = [_turn(ctx, i, round_, actions[i], new[i], [*spent[i], critics[i]]) for i in range(len(new))]
    return new, turns


def _rescore(ctx: Context, new: list[AgentRecord],
             actions: Sequence[Action]) -> tuple[list[AgentRecord], list[Completion | None]]:
    """Critic calls for every refined response (its text is new even when its answer is not); conceded
    ones keep the adopted peer's confidence."""
    needs = [replace(r, changed=a is Action.REFINE) for r, a in zip(new, actions)]
    scored, critics = score_confidence(ctx, needs)
    return [replace(s, changed=n.changed) for s, n in zip(scored, new)], critics


def final_vote(ctx: Context, records: Sequence[AgentRecord]) -> tuple[str | None, str]:
    """The team's answer key and the text of the first agent holding it (what gets scored)."""
    ballots = [Ballot(r.key, r.confidence) for r in records]
    winner = vote(ballots, weighted=ctx.spec.weighted_vote)
    holder = next((r for r in records if winner is not None and r.key == winner), records[0])
    return winner, holder.text


def run_episode(ctx: Context, rng: np.random.Generator) -> Episode:
    """Deliberate on one example and return the full episode record."""
    start = time.perf_counter()
    records, turns = initial_round(ctx)
    rounds_run = 0
    for t in range(1, ctx.cfg.rounds + 1):
        if ctx.spec.policy is None or (ctx.cfg.early_stop and ctx.spec.stop([r.key for r in records])):
            break
        records, new_turns = deliberation_round(ctx, records, t, rng)
        turns += new_turns
        rounds_run = t
    answer, text = final_vote(ctx, records)
    return Episode(ctx.example.id, ctx.spec.name, answer, _score(ctx, text), tuple(turns), rounds_run,
                   time.perf_counter() - start, sum(ctx.batch_seconds))


def _score(ctx: Context, text: str) -> bool:
    """The benchmark's verdict on a response, computed once per distinct text (HumanEval runs code)."""
    if text not in ctx.memo:
        ctx.memo[text] = ctx.bench.score(ctx.example, text)
    return ctx.memo[text]


def _turn(ctx: Context, agent: int, round_: int, action: Action | None, rec: AgentRecord,
          spent: Sequence[Completion | None]) -> Turn:
    """The episode record of one agent's round, with every call it spent."""
    calls = [c for c in spent if c is not None]
    return Turn(
        agent=agent, round=round_, action=action, answer=rec.key, text=rec.text, confidence=rec.confidence,
        prompt_tokens=sum(c.prompt_tokens for c in calls), completion_tokens=sum(c.completion_tokens for c in calls),
        llm_calls=len(calls), cached=bool(calls) and all(c.cached for c in calls), correct=_score(ctx, rec.text),
    )
