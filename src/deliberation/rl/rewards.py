"""The reward registry: what a decision's r_local and r_global measure (DESIGN.md section 1, "Reward").

- ``round`` (DESIGN.md): the vote right after the decision's round (``rl/rollouts.rewards_for``); what
  ``delib collect`` records in rollout files.
- ``episode`` (project issue 27): the answer the team ends with, after the last round, later rounds run
  by the behaviour rule (``rl/episode.episode_rewards``). The round reward is myopic: a round-1 REFINE
  that the next round would have made right anyway, or a CONCEDE the next round undoes, is scored on a
  vote that is not the team's answer.

A reward function has the signature of ``rl/rollouts.Reward``; nothing here imports torch or the engine
(``TrainConfig`` validates names with this table).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deliberation.config import EngineConfig
from deliberation.registry import lookup


@dataclass(frozen=True)
class RewardSpec:
    """A reward function and what training data can hold it."""

    function: str  # "module:function" with the signature of rl/rollouts.Reward
    tree_rounds: int  # rounds a tree store's episodes run for training when --tree-rounds is not given
    in_rollouts: bool  # rollout files of `delib collect` hold this reward


REWARDS: dict[str, RewardSpec] = {
    "round": RewardSpec("deliberation.rl.rollouts:rewards_for", tree_rounds=1, in_rollouts=True),
    # the episode of DESIGN.md's default length: with one round it would be the round reward
    "episode": RewardSpec("deliberation.rl.episode:episode_rewards", tree_rounds=EngineConfig().rounds,
                          in_rollouts=False),
}


def reward_function(name: str) -> Any:
    """The ``Reward`` callable registered under ``name``."""
    return lookup({key: spec.function for key, spec in REWARDS.items()}, name, "reward")
