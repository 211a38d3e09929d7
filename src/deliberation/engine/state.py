"""Meta-cognitive state z_i -> a fixed-size feature vector per agent (docs/design.md, section Meta-cognitive state).

z_i = (decision schema, reasoning profile, introspective confidence). The policy never sees answer text:
the decision schema enters through its agreement structure (parseable?, share of agents holding the same
answer, agrees-with-me flags, majority membership). The reasoning profile is cheap text statistics. The
confidence is the critic's P(Yes) (0.5 when the method computes none).

``FEATURE_NAMES`` and ``FEATURE_VERSION`` are stored in every policy checkpoint and rollout manifest; a
change here must bump the version so old checkpoints are refused instead of silently misread.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from deliberation.engine.consensus import support
from deliberation.types import LogprobSummary

FEATURE_VERSION = 1
FEATURE_NAMES: tuple[str, ...] = (
    "parseable",  # the answer could be extracted
    "agree_share",  # share of all agents holding this answer (self included)
    "confidence",  # critic P(Yes), 0.5 if unknown
    "confidence_vs_mean",  # confidence minus the team's mean confidence
    "is_plurality",  # the answer has the most support in the team
    "log_tokens",  # log1p(completion tokens) / 8: length of the reasoning
    "steps",  # reasoning lines, / 20, capped at 1
    "verified",  # the text checks its own work ("verify", "check", "substitut")
    "changed",  # the answer changed in the last round
    "truncated",  # generation hit max_tokens
    "round_frac",  # round index / total rounds
    "agrees_with_self",  # 1 for the own vector; for a peer vector: the peer holds the own answer
)
N_FEATURES = len(FEATURE_NAMES)
FEATURE_GROUPS: dict[str, tuple[str, ...]] = {
    "agreement-structure": ("agree_share", "is_plurality", "agrees_with_self"),
    "reasoning-profile": ("log_tokens", "steps", "verified", "changed", "truncated"),
    "confidence-signals": ("confidence", "confidence_vs_mean"),  # the critic's P(Yes), absolute and relative
}
"""The state-fidelity ablation's feature groups (the paper's three parts of the observation;
docs/design.md, section Episode reward): a group name in ``--ignore-features`` stands for its features.
``parseable`` and ``round_frac`` are in no group."""
_VERIFY = re.compile(r"\b(verif|check|substitut|double-check|confirm)", re.IGNORECASE)


@dataclass(frozen=True)
class AgentView:
    """What feature extraction needs to know about one agent after a round."""

    key: str | None  # canonical answer key (None = unparseable)
    text: str
    confidence: float | None
    completion_tokens: int
    changed: bool
    truncated: bool
    summary: LogprobSummary | None = None  # the completion's log-probability summary, where recorded


@dataclass(frozen=True)
class Observation:
    """Every agent's view at a decision point: own (A, F) and peers (A, A-1, F) feature arrays."""

    views: tuple[AgentView, ...]
    round: int
    rounds: int
    own: np.ndarray  # (A, F)
    peers: np.ndarray  # (A, A-1, F)


def _profile(view: AgentView) -> tuple[float, float, float, float, float]:
    """Reasoning-profile features of one response."""
    lines = sum(1 for line in view.text.splitlines() if line.strip())
    return (
        math.log1p(view.completion_tokens) / 8.0,
        min(lines / 20.0, 1.0),
        1.0 if _VERIFY.search(view.text) else 0.0,
        float(view.changed),
        float(view.truncated),
    )


def agent_vector(views: Sequence[AgentView], i: int, round_frac: float) -> np.ndarray:
    """z_i as a vector of ``N_FEATURES`` floats (the last slot, agrees_with_self, set to 1)."""
    keys = [v.key for v in views]
    confs = [0.5 if v.confidence is None else v.confidence for v in views]
    own = views[i]
    top = max((support(keys, k) for k in keys if k is not None), default=0)
    share = support(keys, own.key) / len(views)
    conf = confs[i]
    return np.array(
        [float(own.key is not None), share, conf, conf - float(np.mean(confs)),
         float(own.key is not None and support(keys, own.key) == top), *_profile(own), round_frac, 1.0],
        dtype=np.float32,
    )


def observe(views: Sequence[AgentView], round_: int, rounds: int) -> Observation:
    """Features of every agent and, per agent, of its peers (peer j's agrees-with-i flag filled in)."""
    frac = round_ / max(rounds, 1)
    z = np.stack([agent_vector(views, i, frac) for i in range(len(views))])  # (A, F)
    peers = np.stack([_peer_block(z, views, i) for i in range(len(views))]) if len(views) > 1 else (
        np.zeros((len(views), 0, N_FEATURES), dtype=np.float32)
    )  # (A, A-1, F)
    return Observation(views=tuple(views), round=round_, rounds=rounds, own=z, peers=peers)


def _peer_block(z: np.ndarray, views: Sequence[AgentView], i: int) -> np.ndarray:
    """Rows of z for every agent but i, with the agrees-with-i flag in the last column: (A-1, F)."""
    idx = [j for j in range(len(views)) if j != i]
    block = z[idx].copy()
    block[:, -1] = [float(views[j].key is not None and views[j].key == views[i].key) for j in idx]
    return block
