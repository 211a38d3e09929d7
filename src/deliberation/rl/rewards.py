"""The reward registry: what a decision's r_local and r_global measure (docs/design.md, section Rewards).

- ``round`` (the paper's): the vote right after the decision's round (``rl/rollouts.rewards_for``); what
  ``delib collect`` records in rollout files.
- ``episode`` (beyond the paper): the answer the team ends with, after the last round, later rounds run
  by the behaviour rule (``rl/episode.episode_rewards``). The round reward is myopic: a round-1 REFINE
  that the next round would have made right anyway, or a CONCEDE the next round undoes, is scored on a
  vote that is not the team's answer.

The components registry weighs the two terms (the paper's reward-component ablation: r_local only, r_global
only, both); the weights apply to every action's pair before ``r_local + r_global`` is formed, so a dropped
component is zero in ``Decision.rewards`` and in its ``r_local`` / ``r_global`` fields alike.

A reward function has the signature of ``rl/rollouts.Reward``; nothing here imports torch or the engine
(``TrainConfig`` validates names with this table).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

from deliberation.config import EngineConfig
from deliberation.registry import Registry, imported


@dataclass(frozen=True)
class RewardSpec:
    """A reward function and what training data can hold it."""

    function: str  # "module:function" with the signature of rl/rollouts.Reward, imported when chosen
    tree_rounds: int  # rounds a tree store's episodes run for training when --tree-rounds is not given
    in_rollouts: bool  # rollout files of `delib collect` hold this reward


REWARDS: Registry[RewardSpec] = Registry("reward", {
    "round": RewardSpec("deliberation.rl.rollouts:rewards_for", tree_rounds=1, in_rollouts=True),
    # the episode of the engine's default length: with one round it would be the round reward
    "episode": RewardSpec("deliberation.rl.episode:episode_rewards", tree_rounds=EngineConfig().rounds,
                          in_rollouts=False),
})


REWARD_COMPONENTS: Registry[tuple[float, float]] = Registry("reward components", {
    "both": (1.0, 1.0),  # the paper's: r = r_local + r_global
    "local": (1.0, 0.0),  # the agent's own correctness change only
    "global": (0.0, 1.0),  # the team vote's leave-one-out change only
})
"""(weight of r_local, weight of r_global) by name: the reward-component ablation (docs/design.md, section Rewards)."""


def reward_function(name: str, components: str = "both") -> Any:
    """The ``Reward`` callable registered under ``name``, its pairs weighted by ``REWARD_COMPONENTS[components]``."""
    function = imported(REWARDS.resolve(name).function)
    weights = REWARD_COMPONENTS.resolve(components)
    return function if weights == REWARD_COMPONENTS["both"] else partial(_weighted, function, weights)


def _weighted(function: Callable[..., list[tuple[float, float]]], weights: tuple[float, float],
              *args: Any) -> list[tuple[float, float]]:
    """``function``'s (r_local, r_global) pairs, each term times its weight."""
    return [(weights[0] * local, weights[1] * global_) for local, global_ in function(*args)]
