"""The allocator's state: the vote of the samples drawn so far and their zero-cost signals, as features.

A ``State`` holds, per drawn sample, its answer key and the signals a tree store records at no extra call
(``engine/signals.py``): the mean log-probability of the answer's own tokens (the best single signal for
picking a right minority answer at 1.5B) and whether its written arithmetic checks out. No critic: a critic
call costs tokens that self-consistency at equal tokens would spend on samples instead.

``FEATURES`` maps each feature's name to its function of the state; a checkpoint stores the names and
``FEATURE_VERSION`` and is refused by a build that computes other ones. Counts are divided by ``SCALE`` (the
cap the shipped allocator was trained with), so a feature means the same under any ``--max-samples``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from deliberation.engine.adaptive import leader_probability
from deliberation.engine.signals import arith_clean, logprob_answer
from deliberation.engine.state import AgentView
from deliberation.registry import Registry

FEATURE_VERSION = 1
SCALE = 12
"""Counts are divided by this: the most samples the stores of the allocation experiment hold."""


@dataclass(frozen=True)
class Sample:
    """What the state reads of one drawn sample."""

    key: str | None
    logprob: float | None
    """Mean log-probability of its final answer's tokens (None: no summary, or no answer in the text)."""
    arith: float
    """1 when none of its checked computations is wrong, else 0."""


def sample_of(views: Sequence[AgentView], i: int) -> Sample:
    """The state's reading of sample ``i`` of ``views`` (its signals as ``engine/signals.py`` computes them)."""
    return Sample(views[i].key, logprob_answer(views, i), float(arith_clean(views, i) or 0.0))


@dataclass(frozen=True)
class State:
    """The samples drawn so far, in order, and whether the team has deliberated (its first N replaced)."""

    samples: tuple[Sample, ...]
    deliberated: bool = False

    @property
    def keys(self) -> tuple[str | None, ...]:
        return tuple(s.key for s in self.samples)

    @property
    def drawn(self) -> int:
        return len(self.samples)

    def counts(self) -> list[int]:
        """Votes per parseable answer, most first."""
        return sorted(Counter(k for k in self.keys if k is not None).values(), reverse=True)

    def leader(self) -> str | None:
        """The answer with the most votes (first drawn among equals), None when nothing parses."""
        counts = Counter(k for k in self.keys if k is not None)
        return max(counts, key=lambda k: (counts[k], -self.keys.index(k))) if counts else None


def _nth(state: State, n: int) -> int:
    counts = state.counts()
    return counts[n] if len(counts) > n else 0


def _entropy(state: State) -> float:
    """Entropy of the answers drawn (unparseable ones one class), over log(SCALE)."""
    counts = Counter(state.keys).values()
    return -sum(c / state.drawn * math.log(c / state.drawn) for c in counts) / math.log(SCALE)


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _leader_logprob(state: State) -> float:
    lead = state.leader()
    found = _mean([s.logprob for s in state.samples if s.key == lead and lead is not None])
    return 0.0 if found is None else found


def _logprob_gap(state: State) -> float:
    """Leader's mean answer log-probability minus the best other answer's (0 when either is unknown)."""
    lead = state.leader()
    others = {s.key for s in state.samples if s.key not in (None, lead)}
    best = max((m for k in others if (m := _mean([s.logprob for s in state.samples if s.key == k])) is not None),
               default=None)
    mine = _mean([s.logprob for s in state.samples if s.key == lead and lead is not None])
    return 0.0 if best is None or mine is None else mine - best


def _leader_arith(state: State) -> float:
    lead = state.leader()
    found = _mean([s.arith for s in state.samples if s.key == lead and lead is not None])
    return 0.0 if found is None else found


FEATURES: Registry[Callable[[State], float]] = Registry("allocator feature", {
    "drawn": lambda s: s.drawn / SCALE,
    "top_votes": lambda s: _nth(s, 0) / SCALE,
    "second_votes": lambda s: _nth(s, 1) / SCALE,
    "top_share": lambda s: _nth(s, 0) / s.drawn,
    "margin_share": lambda s: (_nth(s, 0) - _nth(s, 1)) / s.drawn,
    "distinct_share": lambda s: len(set(s.keys)) / s.drawn,
    "unparsed_share": lambda s: sum(k is None for k in s.keys) / s.drawn,
    "entropy": _entropy,
    "leader_stays": lambda s: leader_probability(_nth(s, 0), _nth(s, 1)),  # adaptive-consistency's statistic
    "leader_logprob": _leader_logprob,
    "logprob_gap": _logprob_gap,
    "logprob_known": lambda s: float(any(x.logprob is not None for x in s.samples)),
    "leader_arith": _leader_arith,
    "deliberated": lambda s: float(s.deliberated),
})
"""Every feature of the allocator's state by name, in the order of its input vector."""
FEATURE_NAMES: tuple[str, ...] = tuple(FEATURES)


def features(state: State) -> np.ndarray:
    """The state's feature vector (F,), float32, in ``FEATURE_NAMES`` order."""
    return np.array([fn(state) for fn in FEATURES.values()], dtype=np.float32)
