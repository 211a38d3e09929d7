"""Held-out comparison of a trained policy with the fixed policies, on counterfactual rewards.

Every collected decision carries the reward each of the three actions would have earned with the other
agents' moves fixed (``rl.rollouts``), so a policy is scored offline by the reward of the action it picks,
and the constant policies (always PERSIST / REFINE / CONCEDE) and the oracle (best action, an upper
bound) by theirs. This compares single decisions, not whole episodes: an agent's choice changes what its
peers see next round, which only a rerun of the episodes (``delib run``) captures.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from deliberation.policy.network import MetaPolicyNet
from deliberation.rl.data import DecisionBatch
from deliberation.rl.sft import oracle_labels
from deliberation.types import ACTIONS


@dataclass(frozen=True)
class HeldOut:
    """Mean counterfactual reward per decision on held-out questions, for the policy and the references."""

    questions: int
    decisions: int
    policy_reward: float
    decision_accuracy: float  # greedy action == oracle label
    policy_actions: tuple[float, float, float]  # greedy action shares, ACTIONS order
    fixed_rewards: tuple[float, float, float]  # always-PERSIST, always-REFINE, always-CONCEDE
    oracle_reward: float
    oracle_actions: tuple[float, float, float]


def held_out(net: MetaPolicyNet, val: DecisionBatch) -> HeldOut | None:
    """Score ``net``'s greedy actions on ``val`` against the constant policies and the oracle."""
    if len(val) == 0:
        return None
    with torch.no_grad():
        greedy = net(val.own, val.peers, val.peer_mask).argmax(-1)  # (N,)
    oracle = oracle_labels(val.rewards)  # (N,)
    return HeldOut(
        questions=len(set(val.examples)),
        decisions=len(val),
        policy_reward=_reward_of(val, greedy),
        decision_accuracy=float((greedy == oracle).double().mean()),
        policy_actions=_shares(greedy),
        fixed_rewards=tuple(float(val.rewards[:, a].mean()) for a in range(len(ACTIONS))),
        oracle_reward=_reward_of(val, oracle),
        oracle_actions=_shares(oracle),
    )


def _reward_of(val: DecisionBatch, actions: torch.Tensor) -> float:
    """Mean reward (unscaled) of ``actions`` (N,) over the decisions of ``val``."""
    return float(val.rewards.gather(-1, actions.unsqueeze(-1)).mean())


def _shares(actions: torch.Tensor) -> tuple[float, float, float]:
    """(3,) share of each action in ``actions`` (N,), ACTIONS order."""
    counts = torch.bincount(actions, minlength=len(ACTIONS)).double() / len(actions)
    return float(counts[0]), float(counts[1]), float(counts[2])
