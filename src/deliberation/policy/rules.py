"""Fixed meta-policies: the baselines a learned policy must beat (DESIGN.md section 1).

Each is a ``MetaPolicy`` (``decide(obs, rng) -> (actions, logprobs)``; deterministic, so every log-prob
is 0): a constant action (always-persist, always-refine, always-concede, always-resample; debate, ReConcile
and DyLAN are always-refine with their own prompts), confidence-threshold, agreement-threshold (and its
RESAMPLE form, agreement-resample) and agreement-then-confidence.
Agreement-threshold is the bar to clear: on GSM8K with qwen2.5-coder-1.5b it beat debate at two thirds of its
tokens (DESIGN.md section 4). ``JointActions`` fixes each agent's action (the oracle's candidates).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deliberation.engine.consensus import support
from deliberation.engine.state import Observation
from deliberation.types import Action

Decided = tuple[tuple[Action, ...], tuple[float, ...]]


@dataclass(frozen=True)
class ConstantPolicy:
    """Every agent takes ``action`` every round."""

    action: Action

    def decide(self, obs: Observation, rng: np.random.Generator) -> Decided:
        return (self.action,) * len(obs.views), (0.0,) * len(obs.views)


@dataclass(frozen=True)
class ConfidenceThreshold:
    """Persist when the critic's P(Yes) is at least ``threshold``; else concede to a more confident peer
    with another answer; else refine."""

    threshold: float = 0.7

    def decide(self, obs: Observation, rng: np.random.Generator) -> Decided:
        return tuple(self._one(obs, i) for i in range(len(obs.views))), (0.0,) * len(obs.views)

    def _one(self, obs: Observation, i: int) -> Action:
        conf = [0.5 if v.confidence is None else v.confidence for v in obs.views]
        if obs.views[i].key is not None and conf[i] >= self.threshold:
            return Action.PERSIST
        better = [j for j, v in enumerate(obs.views) if v.key not in (None, obs.views[i].key) and conf[j] > conf[i]]
        return Action.CONCEDE if better else Action.REFINE


@dataclass(frozen=True)
class AgreementThreshold:
    """Persist when a peer shares the answer; else concede to an answer two peers share; else ``fallback``:
    REFINE (the agreement rule), or RESAMPLE (agreement-resample: a lone answer is replaced by a fresh
    sample, adaptive sampling's move within the team; issue 37)."""

    fallback: Action = Action.REFINE

    def decide(self, obs: Observation, rng: np.random.Generator) -> Decided:
        return tuple(agreement_action(obs, i, self.fallback) for i in range(len(obs.views))), (0.0,) * len(obs.views)


@dataclass(frozen=True)
class AgreementThenConfidence:
    """Persist when a peer shares the answer; else persist when the critic's P(Yes) is at least
    ``threshold``; else concede to an answer two peers share; else refine. The agreement rule, with a lone
    but confident agent kept from conceding."""

    threshold: float = 0.7

    def decide(self, obs: Observation, rng: np.random.Generator) -> Decided:
        return tuple(self._one(obs, i) for i in range(len(obs.views))), (0.0,) * len(obs.views)

    def _one(self, obs: Observation, i: int) -> Action:
        own = obs.views[i]
        confident = own.key is not None and (0.5 if own.confidence is None else own.confidence) >= self.threshold
        return Action.PERSIST if confident else agreement_action(obs, i)


def agreement_action(obs: Observation, i: int, fallback: Action = Action.REFINE) -> Action:
    """Agent i under the agreement rule: persist when a peer shares its answer, else concede to an answer two
    peers share, else ``fallback``."""
    keys = [v.key for v in obs.views]
    if keys[i] is not None and support(keys, keys[i]) >= 2:
        return Action.PERSIST
    peer_keys = [k for j, k in enumerate(keys) if j != i and k is not None]
    if any(support(peer_keys, k) >= 2 for k in peer_keys):
        return Action.CONCEDE
    return fallback


@dataclass(frozen=True)
class JointActions:
    """Agent i takes ``actions[i]`` in every round, whatever it observes (one joint action of the oracle)."""

    actions: tuple[Action, ...]

    def decide(self, obs: Observation, rng: np.random.Generator) -> Decided:
        return self.actions, (0.0,) * len(self.actions)
