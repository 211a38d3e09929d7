"""The round loop shared by MPDF, every baseline and rollout collection (docs/design.md, section Episode).

Round 0: every agent answers independently (one batch). Rounds 1..R: unless the method's consensus rule
stops early, a step runs. The online step (``deliberation_round``) lets the method's meta-policy pick
PERSIST / REFINE / CONCEDE per agent from the observation, sends every REFINE call as one batch, then the
critic calls for the refined responses as a second batch (``act``). Rollout collection runs the same loop
with a step that acts REFINE for every agent and derives all three outcomes from it (``deliberation.rl.
rollouts``). The team's answer is the vote. Methods differ only in their ``MethodSpec`` (engine/spec.py).

Request seeds: ``request_seed`` packs the agent index into the low 4 bits (the scripted backend reads it as
the agent's identity) above a hash of (run seed, example, round, and agent // 16 from agent 16 on). Every
request carries its ``types.Purpose`` (``purpose``): what it asks, about which question, in which round, on
which solutions, so no reader parses the prompt text.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np

from deliberation.backends.base import Backend
from deliberation.benchmarks.base import Benchmark
from deliberation.config import EngineConfig
from deliberation.engine import confidence as conf_mod
from deliberation.engine import prompts
from deliberation.engine.consensus import Ballot, support, tied_at_top, vote
from deliberation.engine.signals import SIGNALS
from deliberation.engine.spec import MethodSpec
from deliberation.engine.state import AgentView, Observation, observe
from deliberation.actions import Action
from deliberation.types import (Completion, Episode, Example, GenerationRequest, LogprobSummary, Message, Purpose,
                                RequestKind, Turn)


@dataclass(frozen=True)
class AgentRecord:
    """An agent's current response."""

    text: str
    key: str | None
    confidence: float | None
    completion_tokens: int
    truncated: bool
    changed: bool = False
    history: tuple[Message, ...] = ()
    """The conversation that produced ``text``, ending with it as the assistant turn (what continuation
    prompts extend); empty means a round-0 answer (``history_of`` fills it in)."""
    summary: LogprobSummary | None = None
    """The log-probability summary of the completion that produced ``text`` (None where the backend or an
    older store gives none)."""
    resamples: int = 0
    """RESAMPLE actions this agent has taken: its k-th draws round-0 sample k * N + agent (``resample_agent``)."""

    def view(self) -> AgentView:
        return AgentView(self.key, self.text, self.confidence, self.completion_tokens, self.changed, self.truncated,
                         self.summary)


@dataclass(frozen=True)
class Context:
    """Everything one episode needs besides the agents' records; built by ``make_context``."""

    example: Example
    question: str  # the question as shown to agents
    backend: Backend
    bench: Benchmark
    cfg: EngineConfig
    spec: MethodSpec
    prompts: prompts.PromptSet
    memo: dict[str, bool] = field(default_factory=dict)  # text -> score, within the episode
    batch_seconds: list[float] = field(default_factory=list)  # per backend call: its slowest completion


def make_context(example: Example, backend: Backend, bench: Benchmark, cfg: EngineConfig, spec: MethodSpec) -> Context:
    """The one way a Context is built: the question is shown as the benchmark formats it."""
    return Context(example, bench.format_question(example), backend, bench, cfg, spec, prompts.get(cfg.prompts))


def example_rng(seed: int, example_id: str) -> np.random.Generator:
    """The policy's random stream for one example: independent of order, so resumed runs match."""
    return np.random.default_rng([seed, int(hashlib.sha256(example_id.encode()).hexdigest()[:8], 16)])


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


def score(ctx: Context, text: str) -> bool:
    """The benchmark's verdict on a response, computed once per distinct text (HumanEval runs code)."""
    if text not in ctx.memo:
        ctx.memo[text] = ctx.bench.score(ctx.example, text)
    return ctx.memo[text]


def answer_key(ctx: Context, text: str) -> str | None:
    """Canonical answer of a response (None when unparseable)."""
    return ctx.bench.key_for(ctx.example, text)


def record_of(ctx: Context, completion: Completion, changed: bool, asked: tuple[Message, ...]) -> AgentRecord:
    """Turn the completion of the request ``asked`` into an agent record (confidence filled in later)."""
    return AgentRecord(completion.text, answer_key(ctx, completion.text), None, completion.completion_tokens,
                       completion.finish_reason == "length", changed, (*asked, Message("assistant", completion.text)),
                       completion.summary)


def history_of(ctx: Context, record: AgentRecord) -> tuple[Message, ...]:
    """The conversation behind ``record`` (a record built without one is taken as a round-0 answer)."""
    return record.history or prompts.answered(ctx.question, record.text)


def purpose(ctx: Context, prompt: prompts.Prompt, round_: int) -> Purpose:
    """What a request of this episode made in round ``round_`` is for: ``prompt``'s kind and what it shows."""
    return Purpose(prompt.kind, ctx.example.id, ctx.question, round_, prompt.own, prompt.peers)


def generate(ctx: Context, messages: Sequence[tuple[Message, ...]], agents: Sequence[int],
             round_: int) -> list[Completion]:
    """One batch of answer requests, one per agent listed, each marked with its agent (a mixed team sends
    it to that agent's model)."""
    asked = [prompts.Prompt(RequestKind.ANSWER, m) for m in messages]
    return generate_as(ctx, asked, agents, agents, [round_] * len(agents), round_)


def generate_as(ctx: Context, asked: Sequence[prompts.Prompt], agents: Sequence[int], seeded_as: Sequence[int],
                seed_rounds: Sequence[int], round_: int) -> list[Completion]:
    """One batch of round ``round_``'s prompts ``asked``, where request k is seeded as agent ``seeded_as[k]`` of
    round ``seed_rounds[k]`` (a RESAMPLE is seeded as a further round-0 sample) while still marked as sent
    by ``agents[k]``."""
    seed = ctx.cfg.seed
    requests = [
        GenerationRequest(p.messages, ctx.cfg.max_tokens, ctx.cfg.temperature,
                          request_seed(seed, ctx.example.id, s, t), agent=a, purpose=purpose(ctx, p, round_))
        for p, a, s, t in zip(asked, agents, seeded_as, seed_rounds)
    ]
    return call_backend(ctx, requests)


def initial_round(ctx: Context) -> tuple[list[AgentRecord], list[Turn]]:
    """Round 0: every agent answers independently; critic confidence if the method uses it (and, under
    ``MethodSpec.lazy_critic``, something reads it: ``critics_read``)."""
    n = ctx.cfg.agents
    asked = prompts.initial_messages(ctx.question)
    outs = generate(ctx, [asked] * n, range(n), 0)
    records = [record_of(ctx, c, True, asked) for c in outs]
    records, critics = score_confidence(ctx, records, 0)
    turns = [turn_of(ctx, i, 0, None, records[i], [outs[i], critics[i]]) for i in range(n)]
    return records, turns


def score_confidence(ctx: Context, records: list[AgentRecord],
                     round_: int = 0) -> tuple[list[AgentRecord], list[Completion | None]]:
    """Critic calls, one batch, for the records that changed in round ``round_`` (if the method computes
    confidence, and something reads it: ``critics_read``)."""
    todo = [i for i, r in enumerate(records) if r.changed] if ctx.spec.confidence and critics_read(
        ctx, records, round_) else []
    verbal = ctx.cfg.verbal_confidence or not ctx.backend.supports_logprobs
    asked = {i: ctx.prompts.critic(ctx.question, history_of(ctx, records[i]), verbal) for i in todo}
    reqs = [conf_mod.critic_request(asked[i].messages, verbal, i, purpose(ctx, asked[i], round_)) for i in todo]
    outs = call_backend(ctx, reqs)
    critics: list[Completion | None] = [None] * len(records)
    records = list(records)
    for i, out in zip(todo, outs):
        critics[i] = out
        records[i] = replace(records[i], confidence=conf_mod.read_confidence(out, verbal))
    return records, critics


def critics_read(ctx: Context, records: Sequence[AgentRecord], round_: int) -> bool:
    """Whether anything reads the confidences of ``records``, the team after round ``round_``: always,
    unless the method is lazy about its critic (``MethodSpec.lazy_critic``); then only when a later round's
    decisions follow (the stop rule does not hold and rounds are left), or the final vote is weighted or tied
    (its tie-break sums confidences)."""
    if not ctx.spec.lazy_critic or (round_ < ctx.cfg.rounds and not stops(ctx, records)):
        return True
    keys = [r.key for r in records]
    return ctx.spec.weighted_vote or ctx.spec.vote_weights is not None or tied_at_top(keys)


def concede_target(records: Sequence[AgentRecord], i: int) -> int | None:
    """The peer to concede to: among peers holding a different parseable answer, the one whose answer
    has the most support, then the most confident (docs/design.md, section Conceding)."""
    keys = [r.key for r in records]
    peers = [j for j, r in enumerate(records) if j != i and r.key is not None and r.key != records[i].key]
    if not peers:
        return None
    conf = lambda j: -1.0 if records[j].confidence is None else records[j].confidence  # noqa: E731
    return max(peers, key=lambda j: (support(keys, records[j].key), conf(j), -j))


def without_call(records: Sequence[AgentRecord], i: int, action: Action) -> AgentRecord:
    """Agent i's record after an action that needs no LLM call: CONCEDE adopts the rule's peer (when
    there is one), PERSIST (or a CONCEDE with no peer to adopt) keeps the own record."""
    target = concede_target(records, i) if action is Action.CONCEDE else None
    if target is None:
        return replace(records[i], changed=False)
    return replace(records[target], changed=True, resamples=records[i].resamples)


def refine_prompt(ctx: Context, records: Sequence[AgentRecord], i: int) -> prompts.Prompt:
    """The update prompt of agent i, showing its peers' current solutions."""
    peers = [r for j, r in enumerate(records) if j != i]
    return ctx.prompts.update(ctx.spec.update, ctx.question, history_of(ctx, records[i]), [p.text for p in peers],
                              [p.confidence for p in peers])


@dataclass(frozen=True)
class Acted:
    """A round's actions executed: every agent's new record and the completions it spent (its REFINE call
    and the critic call on the refined text; none for PERSIST and CONCEDE)."""

    records: list[AgentRecord]
    calls: list[list[Completion]]


def resample_agent(agents: int, agent: int, resamples: int) -> int:
    """The round-0 sample an agent's RESAMPLE draws: its (resamples + 1)-th fresh answer is sample
    (resamples + 1) * N + agent, so with K recorded round-0 samples a tree store serves every agent's first
    RESAMPLE when K >= 2N (agent i's first takes sample N + i); later ones are grown like deeper rounds."""
    return (resamples + 1) * agents + agent


def act(ctx: Context, records: list[AgentRecord], actions: Sequence[Action], round_: int) -> Acted:
    """Execute one round's actions: REFINE and RESAMPLE calls as one batch, then one critic batch for the
    new responses (a refined text is new even when its answer is not); conceded records keep the adopted
    peer's confidence. A RESAMPLE is the round-0 request of a further sample (``resample_agent``): a fresh
    independent answer, whose record starts a new history."""
    callers = [i for i, a in enumerate(actions) if a in (Action.REFINE, Action.RESAMPLE)]
    asked = [refine_prompt(ctx, records, i) if actions[i] is Action.REFINE else prompts.Prompt(
        RequestKind.ANSWER, prompts.initial_messages(ctx.question)) for i in callers]
    seeds = [i if actions[i] is Action.REFINE else resample_agent(len(records), i, records[i].resamples)
             for i in callers]
    outs = generate_as(ctx, asked, callers, seeds, [round_ if actions[i] is Action.REFINE else 0 for i in callers],
                       round_)
    new = [without_call(records, i, a) for i, a in enumerate(actions)]
    calls: list[list[Completion]] = [[] for _ in records]
    for i, out, prompt in zip(callers, outs, asked):
        drawn = records[i].resamples + (actions[i] is Action.RESAMPLE)
        changed = answer_key(ctx, out.text) != records[i].key
        new[i] = replace(record_of(ctx, out, changed, prompt.messages), resamples=drawn)
        calls[i].append(out)
    spent = [replace(r, changed=a in (Action.REFINE, Action.RESAMPLE)) for r, a in zip(new, actions)]
    scored, critics = score_confidence(ctx, spent, round_)
    for i, critic in enumerate(critics):
        calls[i] += [critic] if critic is not None else []
    return Acted([replace(s, changed=n.changed) for s, n in zip(scored, new)], calls)


def observation(ctx: Context, records: Sequence[AgentRecord], round_: int) -> Observation:
    """What the meta-policy sees before round ``round_``."""
    return observe([r.view() for r in records], round_, ctx.cfg.rounds)


Step = Callable[[Context, list[AgentRecord], int], tuple[list[AgentRecord], list[Turn]]]
"""One deliberation round: (context, records before, round index) -> (records after, the round's turns)."""


def deliberation_round(ctx: Context, records: list[AgentRecord], round_: int,
                       rng: np.random.Generator) -> tuple[list[AgentRecord], list[Turn]]:
    """The online step: observe, let the method's policy decide, act."""
    actions, _ = ctx.spec.policy.decide(observation(ctx, records, round_), rng)
    acted = act(ctx, records, actions, round_)
    return acted.records, [turn_of(ctx, i, round_, actions[i], r, acted.calls[i]) for i, r in enumerate(acted.records)]


def stops(ctx: Context, records: Sequence[AgentRecord]) -> bool:
    """Whether deliberation ends before the next round: no policy, or the method's consensus rule holds."""
    return ctx.spec.policy is None or (ctx.cfg.early_stop and ctx.spec.stop([r.key for r in records]))


def run_rounds(ctx: Context, records: list[AgentRecord], step: Step) -> tuple[list[AgentRecord], list[Turn], int]:
    """Rounds 1..R of ``step`` until the stop rule holds: the final records, the turns, the rounds run."""
    turns: list[Turn] = []
    rounds_run = 0
    for t in range(1, ctx.cfg.rounds + 1):
        if stops(ctx, records):
            break
        records, new_turns = step(ctx, records, t)
        turns += new_turns
        rounds_run = t
    return records, turns, rounds_run


def final_vote(ctx: Context, records: Sequence[AgentRecord]) -> tuple[str | None, str]:
    """The team's answer key and the text of the first agent holding it (what gets scored)."""
    ballots = [Ballot(r.key, r.confidence, w) for r, w in zip(records, ballot_weights(ctx.spec, records))]
    winner = vote(ballots, weighted=ctx.spec.weighted_vote)
    holder = next((r for r in records if winner is not None and r.key == winner), records[0])
    return winner, holder.text


def ballot_weights(spec: MethodSpec, records: Sequence[AgentRecord]) -> list[float]:
    """Each record's vote weight: 1, or under the spec's ``vote_weights`` exp((signal - best) / temperature)
    (a softmax's numerators, CISC), where a record whose signal is undefined weighs as the least confident."""
    if spec.vote_weights is None:
        return [1.0] * len(records)
    views = [r.view() for r in records]
    signal, temperature = SIGNALS[spec.vote_weights.signal], spec.vote_weights.temperature
    values = [signal(views, i) for i in range(len(views))]
    known = [v for v in values if v is not None]
    if not known:
        return [1.0] * len(records)
    return [math.exp(((min(known) if v is None else v) - max(known)) / temperature) for v in values]


def run_episode(ctx: Context, rng: np.random.Generator) -> Episode:
    """Deliberate on one example and return the full episode record."""
    start = time.perf_counter()
    records, turns = initial_round(ctx)
    step = lambda c, recs, t: deliberation_round(c, recs, t, rng)  # noqa: E731
    records, later, rounds_run = run_rounds(ctx, records, step)
    return episode_of(ctx, records, turns + later, rounds_run, start)


def episode_of(ctx: Context, records: Sequence[AgentRecord], turns: Sequence[Turn], rounds_run: int,
               start: float) -> Episode:
    """The episode that ends with ``records``: their vote, scored, with every turn and the time since ``start``
    (a ``time.perf_counter`` reading) and the batches' generation time."""
    answer, text = final_vote(ctx, records)
    return Episode(ctx.example.id, ctx.spec.name, answer, score(ctx, text), tuple(turns), rounds_run,
                   time.perf_counter() - start, sum(ctx.batch_seconds))


def turn_of(ctx: Context, agent: int, round_: int, action: Action | None, rec: AgentRecord,
          spent: Sequence[Completion | None]) -> Turn:
    """The episode record of one agent's round, with every call it spent."""
    calls = [c for c in spent if c is not None]
    return Turn(
        agent=agent, round=round_, action=action, answer=rec.key, text=rec.text, confidence=rec.confidence,
        prompt_tokens=sum(c.prompt_tokens for c in calls), completion_tokens=sum(c.completion_tokens for c in calls),
        llm_calls=len(calls), cached=bool(calls) and all(c.cached for c in calls), correct=score(ctx, rec.text),
    )
