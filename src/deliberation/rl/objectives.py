"""Objectives: which rewards an advantage function compares, and the policy-gradient loss that uses them.

Every decision stores the counterfactual reward of every action of its set (``DecisionBatch.rewards`` (N, A):
the paper's three, or four with RESAMPLE).
The objectives differ in how much of that they use (docs/design.md, section Objectives):

- ``sampled`` (the paper's; the comparators' and the shipped policy's objective): only the reward
  of the action the behaviour policy took is used; the group is the K samples of one (question, round,
  agent); the loss is -mean(A * log pi(a|o)), or PPO-clipped against the behaviour log-prob. With an
  epsilon-mixed near-deterministic behaviour rule (mu = 0.867 on its action, 0.067 on each other) the clip
  stops lowering the rule's action once pi < (1 - eps) * 0.867 = 0.69 and stops raising a rarely taken
  better action once pi > (1 + eps) * 0.067, so the policy stays on the rule's action.
- ``full``: the group is the A actions of one decision (K = A), their counterfactual rewards ranked
  or baselined by the advantage function (SoftRankPO: ties share their normal score, so a decision where
  all actions earn the same gets A = 0); the loss is the expected-advantage loss -mean_n sum_a pi(a|o_n)
  A(n, a). Every action is scored, so there is no sampled action, no importance ratio and no clip.
  ``reinforce_baseline-full`` is this loss with A = r(a) - mean_a r(a), ``softrankpo-full`` with the rank
  normal scores; ``reinforce-full`` (A = r(a)) has the same gradient as the former, since sum_a pi(a) = 1.
- ``pooled``: as ``full``, but the group is every (sample, action) pair of one (question, round, agent):
  the A K counterfactual rewards of its K behaviour samples ranked together (the samples differ in the
  other agents' actions), each decision's actions scored by their rank among all of them.

Why -sum_a pi(a|o) A(a|o) and not the log-prob-weighted -sum_a A(a|o) log pi(a|o): the first is exactly the
(negated) expected advantage under pi, so its gradient is the policy gradient with the action summed out
instead of sampled; it is bounded (|loss| <= max |A|) and an action with A < 0 stops being pushed once pi
leaves it. The second is a weighted cross-entropy that keeps pushing log pi of every negative-advantage
action towards -inf (unbounded below): the collapse ``TrainConfig.clip_eps`` exists to prevent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import torch
from torch import Tensor

from deliberation.errors import DelibError
from deliberation.rl.data import DecisionBatch
from deliberation.rl.losses import expected_advantage, policy_gradient

if TYPE_CHECKING:
    from deliberation.rl.algorithms import Algorithm
    from deliberation.rl.config import TrainConfig

Inputs = Callable[[DecisionBatch, "TrainConfig"], tuple[Tensor, Tensor]]
"""(batch, cfg) -> rewards (M,) and groups (M,) for the advantage function."""


@dataclass(frozen=True)
class Objective:
    """The rewards an advantage function compares and the loss form: one entry of ``algorithms.OBJECTIVES``."""

    inputs: Inputs
    per_action: bool  # inputs are the A rewards of every decision (M = A N), advantages come back (N, A)
    loss: Callable[[Tensor, Tensor, Tensor, Tensor, "float | None"], Tensor]  # policy_gradient's signature

    def advantages(self, algo: Algorithm, batch: DecisionBatch, cfg: TrainConfig) -> Tensor:
        """(N,) advantages of the taken actions, or (N, A) of every action when ``per_action``."""
        rewards, groups = self.inputs(batch, cfg)  # (M,), (M,)
        adv = algo.advantages(rewards, groups, cfg)  # (M,)
        return adv.reshape(len(batch), batch.rewards.shape[-1]) if self.per_action else adv


def taken_rewards(batch: DecisionBatch, cfg: TrainConfig) -> Tensor:
    """(N,) reward of the action taken: reward_scale * rewards[action] - token_cost_coef * token_cost."""
    taken = batch.rewards.gather(-1, batch.actions.unsqueeze(-1)).squeeze(-1)  # (N,)
    return cfg.reward_scale * taken - cfg.token_cost_coef * batch.token_costs


def action_rewards(batch: DecisionBatch, cfg: TrainConfig) -> Tensor:
    """(N, A) reward of every action: reward_scale * rewards - token_cost_coef * action_costs."""
    scaled = cfg.reward_scale * batch.rewards  # (N, A)
    if cfg.token_cost_coef == 0:
        return scaled
    unknown = int(torch.isnan(batch.action_costs).any(-1).sum())
    if unknown:
        raise DelibError(f"--token-cost-coef {cfg.token_cost_coef} with a full-information algo needs the REFINE "
                         f"cost of every decision, and {unknown} decisions lack it (rollouts recorded before "
                         "Decision.refine_tokens, in groups where no sample refined); recollect them with "
                         "`delib collect`, or train with --token-cost-coef 0 or a sampled algo")
    return scaled - cfg.token_cost_coef * batch.action_costs


def _sampled_inputs(batch: DecisionBatch, cfg: TrainConfig) -> tuple[Tensor, Tensor]:
    """The taken actions' rewards, grouped by (question, round, agent): ranking needs several samples."""
    if int(torch.bincount(batch.groups).max()) < 2:
        raise DelibError("every (question, round, agent) has a single sample, so there is nothing to rank; "
                         "collect rollouts with --joint-actions 2 or more (not --group-size 1), or train a "
                         "full-information algo (NAME-full)")
    return taken_rewards(batch, cfg), batch.groups


def _full_inputs(batch: DecisionBatch, cfg: TrainConfig) -> tuple[Tensor, Tensor]:
    """Every action's reward (A N,), grouped by decision: the A actions of decision n form group n."""
    groups = torch.arange(len(batch)).repeat_interleave(batch.rewards.shape[-1])  # (AN,)
    return action_rewards(batch, cfg).reshape(-1), groups


def _pooled_inputs(batch: DecisionBatch, cfg: TrainConfig) -> tuple[Tensor, Tensor]:
    """Every action's reward (A N,), grouped by (question, round, agent): A K rewards per group."""
    return action_rewards(batch, cfg).reshape(-1), batch.groups.repeat_interleave(batch.rewards.shape[-1])


SAMPLED = Objective(_sampled_inputs, per_action=False, loss=policy_gradient)
FULL = Objective(_full_inputs, per_action=True, loss=expected_advantage)
POOLED = Objective(_pooled_inputs, per_action=True, loss=expected_advantage)
