"""Votes over agents' answers: plurality with a confidence tie-break, and the leave-one-out vote.

Answers are compared through ``Benchmark.answer_key`` so "18" and "18.00" vote together. Unparseable
answers (None) never win a vote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Ballot:
    """One agent's vote: its canonical answer key (None if unparseable) and confidence."""

    key: str | None
    confidence: float | None = None
    weight: float = 1.0


def tally(ballots: Sequence[Ballot], weighted: bool = False) -> dict[str, tuple[float, float]]:
    """answer key -> (votes, summed confidence); ``weighted`` counts each vote as its confidence."""
    scores: dict[str, tuple[float, float]] = {}
    for b in ballots:
        if b.key is None:
            continue
        conf = 0.5 if b.confidence is None else b.confidence
        votes, confs = scores.get(b.key, (0.0, 0.0))
        scores[b.key] = (votes + (conf if weighted else b.weight), confs + conf)
    return scores


def vote(ballots: Sequence[Ballot], weighted: bool = False) -> str | None:
    """The winning answer key: most votes, ties broken by summed confidence, then first seen."""
    scores = tally(ballots, weighted)
    if not scores:
        return None
    order = {key: i for i, key in reversed(list(enumerate(b.key for b in ballots)))}
    return max(scores, key=lambda k: (scores[k][0], scores[k][1], -order[k]))


def tied_at_top(keys: Sequence[str | None]) -> bool:
    """Whether two parseable answers share the most agents (each agent's answer counted once, as an unweighted
    vote counts it): the vote's tie-break then reads confidences."""
    votes = sorted((v for v, _ in tally([Ballot(k) for k in keys]).values()), reverse=True)
    return len(votes) > 1 and votes[0] == votes[1]


def leave_one_out(ballots: Sequence[Ballot], agent: int, weighted: bool = False) -> str | None:
    """The vote of every agent but ``agent`` (for the global, counterfactual reward)."""
    return vote([b for i, b in enumerate(ballots) if i != agent], weighted)


def support(keys: Sequence[str | None], key: str | None) -> int:
    """How many agents hold ``key`` (0 for an unparseable answer)."""
    return 0 if key is None else sum(k == key for k in keys)


def unanimous(keys: Sequence[str | None]) -> bool:
    """All agents hold the same parseable answer."""
    return bool(keys) and keys[0] is not None and all(k == keys[0] for k in keys)


def share_above(keys: Sequence[str | None], fraction: float) -> bool:
    """More than ``fraction`` of the agents hold one parseable answer (DyLAN's early stop, 2/3)."""
    best = max((support(keys, k) for k in set(keys) if k is not None), default=0)
    return best > fraction * len(keys)
