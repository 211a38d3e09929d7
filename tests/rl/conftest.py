"""Synthetic decisions whose best action is a known function of the features (a contextual bandit)."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pytest
import torch

from deliberation.actions import ACTIONS, Action
from deliberation.types import Decision

N_FEATURES = 4
N_AGENTS = 3
# One intra-op thread: the networks are tiny and the test machine's cores are shared, where extra threads
# only add contention. Results do not depend on it.
torch.set_num_threads(1)


def best_action(own: np.ndarray, peers: np.ndarray) -> Action:
    """The rule the policy must discover: persist when confident, concede when peers agree, else refine.
    Shares under uniform features: persist 0.4, concede 0.3, refine 0.3 (best fixed policy ~0.4)."""
    if own[0] > 0.6:
        return Action.PERSIST
    return Action.CONCEDE if peers[:, 1].mean() > 0.5 else Action.REFINE


def synthetic_decisions(n_examples: int = 60, group_size: int = 8, seed: int = 0) -> list[Decision]:
    """Uniform-behaviour decisions: per (example, agent) ``group_size`` samples with random features and a
    uniformly random action; the best action earns 1, the others 0 or -1 at random."""
    rng = np.random.default_rng(seed)
    out = []
    for ex in range(n_examples):
        for agent in range(N_AGENTS):
            for sample in range(group_size):
                own, peers = rng.random(N_FEATURES), rng.random((N_AGENTS - 1, N_FEATURES))
                best = ACTIONS.index(best_action(own, peers))
                rewards = tuple(1.0 if a == best else float(rng.choice([0.0, -1.0])) for a in range(3))
                out.append(Decision(
                    example_id=f"q{ex}", sample=sample, round=1, agent=agent, own=tuple(own.tolist()),
                    peers=tuple(tuple(p.tolist()) for p in peers), action=ACTIONS[int(rng.integers(3))],
                    logprob=math.log(1 / 3), rewards=rewards, r_local=0.0, r_global=0.0))
    return out


@pytest.fixture(scope="session")
def decisions() -> list[Decision]:
    return synthetic_decisions()


@pytest.fixture
def make_decisions() -> Callable[..., list[Decision]]:
    return synthetic_decisions
