"""Epsilon exploration, the one implementation: a behaviour policy for rollout collection.

The base policy's action is replaced by a uniform one of the action set with probability epsilon; the
log-probs returned are those of the mixture, (1 - eps) * 1[a = base] + eps / |set|, as importance ratios
need.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deliberation.engine.spec import MetaPolicy
from deliberation.engine.state import Observation
from deliberation.actions import ACTIONS, Action


@dataclass(frozen=True)
class EpsilonMixed:
    """``base`` mixed with the uniform policy over ``actions`` (weight ``epsilon``)."""

    base: MetaPolicy
    epsilon: float = 0.2
    actions: tuple[Action, ...] = ACTIONS

    def decide(self, obs: Observation, rng: np.random.Generator) -> tuple[tuple[Action, ...], tuple[float, ...]]:
        base, _ = self.base.decide(obs, rng)
        n = len(self.actions)
        actions = tuple(self.actions[rng.integers(n)] if rng.random() < self.epsilon else a for a in base)
        probs = [(1 - self.epsilon) * (a == b) + self.epsilon / n for a, b in zip(actions, base)]
        return actions, tuple(float(np.log(p)) for p in probs)
