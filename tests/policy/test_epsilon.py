"""Epsilon exploration (policy/epsilon.py): the behaviour policy of rollout collection."""

from __future__ import annotations

import math

import numpy as np

from deliberation.engine.state import AgentView, observe
from deliberation.policy.epsilon import EpsilonMixed
from deliberation.policy.rules import ConstantPolicy
from deliberation.actions import ACTIONS, Action


OBS = observe([AgentView(str(i), f"answer {i}", 0.5, 10, False, False) for i in range(3)], 1, 2)


def decided(policy: EpsilonMixed, draws: int, seed: int) -> tuple[list[Action], list[float]]:
    """``draws`` decisions of three agents, flattened."""
    rng = np.random.default_rng(seed)
    pairs = [policy.decide(OBS, rng) for _ in range(draws)]
    return [a for acts, _ in pairs for a in acts], [lp for _, lps in pairs for lp in lps]


def test_logprobs_are_those_of_the_mixture():
    """eps 0.3 around always-PERSIST: P(PERSIST) = 0.7 + 0.1, P(other) = 0.1 (hand-computed)."""
    actions, logprobs = decided(EpsilonMixed(ConstantPolicy(Action.PERSIST), 0.3), 70, 0)
    expected = [math.log(0.8) if a is Action.PERSIST else math.log(0.1) for a in actions]
    assert np.allclose(logprobs, expected)
    assert {Action.REFINE, Action.CONCEDE} <= set(actions)


def test_exploration_share_matches_epsilon():
    actions, _ = decided(EpsilonMixed(ConstantPolicy(Action.CONCEDE), 0.6), 2000, 1)
    freq = np.bincount([ACTIONS.index(a) for a in actions], minlength=3) / len(actions)
    assert np.allclose(freq, [0.2, 0.2, 0.6], atol=0.03)


def test_epsilon_one_is_uniform_and_the_base_is_ignored():
    _, logprobs = decided(EpsilonMixed(ConstantPolicy(Action.REFINE), 1.0), 10, 2)
    assert np.allclose(logprobs, math.log(1 / 3))
