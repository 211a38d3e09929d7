"""Adaptive sampling (Adaptive-Consistency, Aggarwal et al., EMNLP 2023): draw round-0 samples one at a
time and stop as soon as their agreement makes a change of the majority unlikely.

Stopping rule (the paper's Beta criterion): with v1 and v2 the counts of the two most frequent parseable
answers so far, stop when P(p > 1/2) > ``threshold`` for p ~ Beta(v1 + 1, v2 + 1), the posterior share of
the leader among the two; at most ``--agents`` samples are drawn. Sample j is the request every other
method sends as agent j's round-0 answer (same prompt and seed), so a tree store's recorded samples serve
it offline and exactly.
"""

from __future__ import annotations

import time
from collections import Counter
from math import comb
from typing import Sequence

import numpy as np

from deliberation.engine import prompts
from deliberation.engine.loop import Context, episode_of, generate, record_of, turn_of
from deliberation.types import Episode

THRESHOLD = 0.95
"""The paper's default confidence that the leader stays the leader."""


def leader_probability(v1: int, v2: int) -> float:
    """P(p > 1/2) for p ~ Beta(v1 + 1, v2 + 1): 1 - I_{1/2}(v1 + 1, v2 + 1), exact for integer counts
    (I_{1/2}(a, b) = P(Binomial(a + b - 1, 1/2) >= a))."""
    a, n = v1 + 1, v1 + v2 + 1
    return 1.0 - sum(comb(n, j) for j in range(a, n + 1)) / 2**n


def settled(keys: Sequence[str | None], threshold: float = THRESHOLD) -> bool:
    """Whether the samples' answers ``keys`` meet the stopping rule."""
    top = Counter(k for k in keys if k is not None).most_common(2)
    if not top:
        return False
    return leader_probability(top[0][1], top[1][1] if len(top) > 1 else 0) > threshold


def first_settled(threshold: float = THRESHOLD, most: int = 1000) -> int:
    """The fewest samples after which the rule can hold at ``threshold``: that many answers, all alike (at
    0.95, 4; 3 give 0.9375). ``most`` when not even that many would (a threshold of 1)."""
    return next((k for k in range(1, most) if settled(["same"] * k, threshold)), most)


def adaptive_episode(ctx: Context, rng: np.random.Generator) -> Episode:
    """Samples 0, 1, ... (at most ``ctx.cfg.agents``) until the spec's stop rule (``settled`` at its threshold)
    holds; the majority of those drawn."""
    start = time.perf_counter()
    asked = prompts.initial_messages(ctx.question)
    records, turns = [], []
    for agent in range(ctx.cfg.agents):
        [out] = generate(ctx, [asked], [agent], 0)
        records.append(record_of(ctx, out, True, asked))
        turns.append(turn_of(ctx, agent, 0, None, records[-1], [out]))
        if ctx.spec.stop([r.key for r in records]):
            break
    return episode_of(ctx, records, turns, 0, start)
