"""The allocation episode, as the engine runs it on any backend (the ``mpdf-allocate`` method, and ESC).

The team draws round-0 samples 0..first-1 (one batch); then, until the allocator says STOP or ``limit``
samples are drawn, each RESAMPLE draws the next ``step`` samples (one batch; the last one cut at the cap).
A DELIBERATE (first decision only, a three-move allocator) runs one deliberation round of the team under
``deliberation`` (the agreement rule: PERSIST / REFINE / CONCEDE, engine/loop.py), whose answers then
replace the team's own in the vote and the state. The answer is the vote of the current answers, weighted as
the method's spec says. Sample j is seeded as round-0 sample j of every other method, so a tree store with
``limit`` samples serves every call offline.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from deliberation.allocate.moves import Allocator, Move
from deliberation.allocate.state import State, sample_of
from deliberation.engine import prompts
from deliberation.engine.loop import (AgentRecord, Context, deliberation_round, episode_of, generate, make_context,
                                      record_of, turn_of)
from deliberation.engine.spec import MethodSpec
from deliberation.policy.rules import AgreementThreshold
from deliberation.types import Episode, Turn

DELIBERATION = MethodSpec(name="agreement-threshold", policy=AgreementThreshold())
"""What DELIBERATE runs: the agreement rule (persist if a peer agrees, else concede to a pair, else refine),
the fixed rule of the paper's three actions that beat debate and the learned policy at 1.5B."""
Opening = Callable[[State], Move]
"""The first decision of an allocator that may DELIBERATE there (``LearnedAllocator.choose(state, True)``)."""


@dataclass(frozen=True)
class Allocation:
    """What a sampling method's spec carries (``MethodSpec.protocol``): its allocator, the most samples it
    draws, and, for an allocator that may DELIBERATE, the deliberation's spec and the first move's chooser."""

    allocator: Allocator
    limit: int
    deliberation: MethodSpec | None = None
    opening: Opening | None = None
    reads_summaries: bool = False
    """Its state reads the log-probability summaries (a live run needs a backend recording them)."""


def run_allocation(ctx: Context, rng: np.random.Generator) -> Episode:
    """The episode of a method whose spec carries an ``Allocation`` (a ``Method.episode``)."""
    found: Allocation = ctx.spec.protocol
    return allocation_episode(ctx, rng, found.allocator, found.limit, found.deliberation, found.opening)


def state_of(records: list[AgentRecord], deliberated: bool) -> State:
    views = [r.view() for r in records]
    return State(tuple(sample_of(views, i) for i in range(len(views))), deliberated)


def allocation_episode(ctx: Context, rng: np.random.Generator, allocator: Allocator, limit: int,
                       deliberation: MethodSpec | None = None, opening: Opening | None = None) -> Episode:
    """One episode (see the module docstring); ``opening`` decides the first move where DELIBERATE is open."""
    start = time.perf_counter()
    asked = prompts.initial_messages(ctx.question)
    records: list[AgentRecord] = []
    turns: list[Turn] = []
    drawn, deliberated = 0, False

    def draw(count: int) -> None:
        """Samples ``drawn``.. as round-0 turns (a round-0 turn carries no action, whoever asked for it)."""
        nonlocal drawn
        index = list(range(drawn, min(drawn + count, limit)))
        for i, out in zip(index, generate(ctx, [asked] * len(index), index, 0)):
            records.append(record_of(ctx, out, True, asked))
            turns.append(turn_of(ctx, i, 0, None, records[-1], [out]))
        drawn += len(index)

    draw(allocator.first or ctx.cfg.agents)
    decisions = 0
    while drawn < limit:
        state = state_of(records, deliberated)
        first_move = decisions == 0 and opening is not None and deliberation is not None
        move = opening(state) if first_move else allocator.decide(state, rng)
        decisions += 1
        if move is Move.STOP:
            break
        if move is Move.DELIBERATE:
            records, more = deliberate(ctx, records, deliberation, rng)  # type: ignore[arg-type]
            turns += more
            deliberated = True
            continue
        draw(allocator.step or ctx.cfg.agents)
    return episode_of(ctx, records, turns, int(deliberated), start)


def deliberate(ctx: Context, records: list[AgentRecord], spec: MethodSpec,
               rng: np.random.Generator) -> tuple[list[AgentRecord], list[Turn]]:
    """One round of ``spec``'s policy among the team (the records drawn first), as its own method runs it."""
    inner = make_context(ctx.example, ctx.backend, ctx.bench, replace(ctx.cfg, agents=len(records), rounds=1), spec)
    new, turns = deliberation_round(inner, list(records), 1, rng)
    ctx.batch_seconds.extend(inner.batch_seconds)
    return new, turns
