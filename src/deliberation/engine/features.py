"""Feature sets: which numbers describe an agent to a learned policy, one registry entry each.

``paper`` is the paper's meta-cognitive state (engine/state.py, feature version 1), the default, and what
every shipped checkpoint and committed rollout file holds. ``signals`` extends it with zero-cost
correctness signals (engine/signals.py): checked arithmetic and log-probability confidence,
absolute and relative to the team. A checkpoint records its set's names and version; loading finds the set
by that contract (``contract``), so old checkpoints keep reading the paper's features unchanged.

Undefined signals enter as neutral values with a flag: no checkable step gives wrong share 0 and
``answer_follows`` 0.5; no log-probability summary gives ``lp_known`` 0 and zeros.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

from deliberation.engine import arith_check
from deliberation.engine.signals import logprob_answer
from deliberation.engine.state import FEATURE_GROUPS, FEATURE_NAMES, FEATURE_VERSION, AgentView, Observation
from deliberation.registry import Registry

ARITH_FEATURES: tuple[str, ...] = (
    "arith_wrong_share",  # share of the checked computations that are wrong (0 when none is checkable)
    "arith_checked",  # checked computations / 10, capped at 1
    "answer_follows",  # the final answer is the last checked result: 1, 0; 0.5 when nothing is checked
)
LOGPROB_FEATURES: tuple[str, ...] = (
    "lp_known",  # 1 when the completion's log-probability summary is recorded
    "lp_mean",  # mean token log-probability (0 when unknown)
    "lp_lowest_window",  # lowest 16-token window mean (0 when unknown)
    "lp_answer",  # mean log-probability of the final answer's tokens (0 when unknown)
    "lp_mean_vs_team",  # lp_mean minus the team's mean over agents with a summary (0 when unknown)
)
SIGNAL_FEATURES = ARITH_FEATURES + LOGPROB_FEATURES


@dataclass(frozen=True)
class FeatureSet:
    """A named feature contract: names in column order, a version, ablation groups of names, and how the
    columns past the paper's state are computed from the team's views (None: the paper's state alone)."""

    name: str
    version: int
    names: tuple[str, ...]
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    extra_columns: Callable[[Sequence[AgentView]], np.ndarray] | None = None
    """(views) -> (A, len(names) - len(FEATURE_NAMES)) float32: the columns after the paper's."""
    reads_summaries: bool = False
    """Some columns come from completions' log-probability summaries (runs refuse backends recording none)."""


def signal_columns(views: Sequence[AgentView]) -> np.ndarray:
    """The ``SIGNAL_FEATURES`` of every agent: (A, S) float32."""
    known = [v.summary.mean for v in views if v.summary is not None]
    team = float(np.mean(known)) if known else 0.0
    return np.array([_signals_of(views, i, team) for i in range(len(views))], dtype=np.float32).reshape(
        len(views), len(SIGNAL_FEATURES))


PAPER = FeatureSet("paper", FEATURE_VERSION, FEATURE_NAMES, FEATURE_GROUPS)
SIGNALS = FeatureSet("signals", 2, FEATURE_NAMES + SIGNAL_FEATURES, {
    **FEATURE_GROUPS,
    "checked-arithmetic": ARITH_FEATURES,
    "logprob-confidence": LOGPROB_FEATURES,
}, signal_columns, reads_summaries=True)
FEATURE_SETS: Registry[FeatureSet] = Registry("feature set", {s.name: s for s in (PAPER, SIGNALS)})
"""Every feature set by name (``--features``)."""


def contract(names: Sequence[str], version: int) -> FeatureSet | None:
    """The registered set with exactly these names and version (a checkpoint's or rollout file's)."""
    return next((s for s in FEATURE_SETS.values() if s.names == tuple(names) and s.version == version), None)


def _signals_of(views: Sequence[AgentView], i: int, team_mean: float) -> list[float]:
    view = views[i]
    arith = arith_check.summarize(view.text, view.key)
    follows = 0.5 if arith.answer_follows is None else float(arith.answer_follows)
    wrong = arith.wrong / arith.checked if arith.checked else 0.0
    if view.summary is None:
        return [wrong, min(arith.checked / 10, 1.0), follows, 0.0, 0.0, 0.0, 0.0, 0.0]
    answer = logprob_answer(views, i)
    s = view.summary
    return [wrong, min(arith.checked / 10, 1.0), follows, 1.0, s.mean, s.lowest_window,
            0.0 if answer is None else answer, s.mean - team_mean]


def arrays(obs: Observation, feature_set: FeatureSet) -> tuple[np.ndarray, np.ndarray]:
    """own (A, F) and peers (A, A-1, F) of ``obs`` under ``feature_set`` (the paper's: as observed)."""
    if feature_set.extra_columns is None:
        return obs.own, obs.peers
    extra = feature_set.extra_columns(obs.views)  # (A, S)
    own = np.concatenate([obs.own, extra], axis=1)  # (A, F)
    n = len(obs.views)
    peers = np.stack([own[[j for j in range(n) if j != i]] for i in range(n)]) if n > 1 else (
        np.zeros((n, 0, own.shape[1]), dtype=np.float32))  # (A, A-1, F)
    if n > 1:
        peers[:, :, : obs.peers.shape[2]] = obs.peers  # keep each peer's agrees-with-me flag
    return own, peers
