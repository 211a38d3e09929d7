"""Fixed meta-policies: the baselines a learned policy must beat (DESIGN.md section 1).

Each is a ``MetaPolicy`` (``decide(obs, rng) -> (actions, logprobs)``) and a method of its own:
always-persist, always-refine, always-concede, confidence-threshold and agreement-threshold. The last is
the bar to clear: on GSM8K with qwen2.5-coder-1.5b it beat debate at two thirds of its tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deliberation.deliberation.consensus import support
from deliberation.deliberation.engine import MetaPolicy, MethodSpec
from deliberation.deliberation.state import Observation
from deliberation.methods.base import make_run
from deliberation.types import Action


@dataclass(frozen=True)
class ConstantPolicy:
    """Every agent takes ``action`` every round."""

    action: Action

    def decide(self, obs: Observation, rng: np.random.Generator) -> tuple[tuple[Action, ...], tuple[float, ...]]:
        return (self.action,) * len(obs.views), (0.0,) * len(obs.views)


@dataclass(frozen=True)
class ConfidenceThreshold:
    """Persist when the critic's P(Yes) is at least ``threshold``; else concede to a more confident peer
    with another answer; else refine."""

    threshold: float = 0.7

    def decide(self, obs: Observation, rng: np.random.Generator) -> tuple[tuple[Action, ...], tuple[float, ...]]:
        return tuple(self._one(obs, i) for i in range(len(obs.views))), (0.0,) * len(obs.views)

    def _one(self, obs: Observation, i: int) -> Action:
        conf = [0.5 if v.confidence is None else v.confidence for v in obs.views]
        if obs.views[i].key is not None and conf[i] >= self.threshold:
            return Action.PERSIST
        better = [j for j, v in enumerate(obs.views) if v.key not in (None, obs.views[i].key) and conf[j] > conf[i]]
        return Action.CONCEDE if better else Action.REFINE


@dataclass(frozen=True)
class AgreementThreshold:
    """Persist when a peer shares the answer; else concede to an answer two peers share; else refine."""

    def decide(self, obs: Observation, rng: np.random.Generator) -> tuple[tuple[Action, ...], tuple[float, ...]]:
        return tuple(self._one(obs, i) for i in range(len(obs.views))), (0.0,) * len(obs.views)

    @staticmethod
    def _one(obs: Observation, i: int) -> Action:
        keys = [v.key for v in obs.views]
        if keys[i] is not None and support(keys, keys[i]) >= 2:
            return Action.PERSIST
        peer_keys = [k for j, k in enumerate(keys) if j != i and k is not None]
        if any(support(peer_keys, k) >= 2 for k in peer_keys):
            return Action.CONCEDE
        return Action.REFINE


def _method(name: str, policy: MetaPolicy, confidence: bool = False) -> MethodSpec:
    return MethodSpec(name=name, policy=policy, confidence=confidence)


run_always_persist = make_run(lambda cfg: _method("always-persist", ConstantPolicy(Action.PERSIST)))
run_always_refine = make_run(lambda cfg: _method("always-refine", ConstantPolicy(Action.REFINE)))
run_always_concede = make_run(lambda cfg: _method("always-concede", ConstantPolicy(Action.CONCEDE)))
run_confidence_threshold = make_run(
    lambda cfg: _method("confidence-threshold", ConfidenceThreshold(cfg.confidence_threshold), confidence=True))
run_agreement_threshold = make_run(lambda cfg: _method("agreement-threshold", AgreementThreshold()))
