"""The algorithm registry, the one place an algorithm's name is read (DESIGN.md section 1, "Training").

An algorithm is an advantage function (a key of ``ADVANTAGES``, the registry of ``rl/advantages.py``) plus
the objective it is trained with (a key of ``OBJECTIVES``, ``rl/objectives.py``: which rewards the function
compares and the loss form); ``sft`` is the entry with no advantage: cross-entropy on oracle labels. The
table is built from ``ADVANTAGES``: each function trains under the sampled objective by its own name (the
comparators of DESIGN.md) and under the full-information objective as ``NAME-full`` (project issue 27).
Nothing here imports torch (the CLI and ``TrainConfig`` validate names with it); functions load on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deliberation.registry import lookup

ADVANTAGES: dict[str, str] = {
    "softrankpo": "deliberation.rl.advantages:softrankpo",
    "grpo": "deliberation.rl.advantages:grpo",
    "reinforce": "deliberation.rl.advantages:reinforce",
    "reinforce_baseline": "deliberation.rl.advantages:reinforce_baseline",
    "rloo": "deliberation.rl.advantages:rloo",
}
"""name -> "module:function" with signature (rewards (N,), groups (N,), **params) -> advantages (N,)."""
ADVANTAGE_PARAMS: dict[str, tuple[str, ...]] = {"softrankpo": ("tau",)}
"""TrainConfig fields passed to an advantage function by keyword."""
OBJECTIVES: dict[str, str] = {
    "sampled": "deliberation.rl.objectives:SAMPLED",
    "full": "deliberation.rl.objectives:FULL",
    "pooled": "deliberation.rl.objectives:POOLED",
}
"""name -> "module:attribute" of an ``Objective``: the rewards ranked together and the loss that uses them."""
PPO_CLIP_EPS = 0.2  # Schulman et al. 2017, section 6.1


@dataclass(frozen=True)
class Algorithm:
    """An advantage function plus the objective it is trained with (``advantage`` None: supervised)."""

    advantage: str | None
    default_clip_eps: float | None = None  # clip used when TrainConfig.clip_eps is None (None = plain PG)
    objective: str = "sampled"  # a key of OBJECTIVES

    @property
    def supervised(self) -> bool:
        """SFT: oracle labels and cross-entropy; no advantages, no start policy."""
        return self.advantage is None

    def advantages(self, rewards: Any, groups: Any, cfg: Any) -> Any:
        """(N,) rewards and groups -> (N,) advantages, the function's params read from ``cfg`` (TrainConfig)."""
        fn = lookup(ADVANTAGES, self.advantage, "advantage function")
        return fn(rewards, groups, **{name: getattr(cfg, name) for name in ADVANTAGE_PARAMS.get(self.advantage, ())})

    def clip_eps(self, cfg: Any) -> float | None:
        """The PPO clip epsilon in force under ``cfg`` (TrainConfig), or None for the plain policy gradient."""
        return cfg.clip_eps if cfg.clip_eps is not None else self.default_clip_eps

    def decision_advantages(self, batch: Any, cfg: Any) -> Any:
        """Advantages of a DecisionBatch under this algorithm's objective: (N,) for the action each decision
        took, or (N, A) for every action (ACTION_ORDER)."""
        return lookup(OBJECTIVES, self.objective, "objective").advantages(self, batch, cfg)

    def policy_gradient(self, logp: Any, actions: Any, advantages: Any, behaviour_logp: Any, cfg: Any) -> Any:
        """The objective's policy-gradient loss () of log-probs (N, A) and ``decision_advantages`` rows."""
        objective = lookup(OBJECTIVES, self.objective, "objective")
        return objective.loss(logp, actions, advantages, behaviour_logp, self.clip_eps(cfg))


ALGORITHMS: dict[str, Algorithm] = {
    "sft": Algorithm(None),
    **{name: Algorithm(name) for name in ADVANTAGES},
    "ppo": Algorithm("grpo", default_clip_eps=PPO_CLIP_EPS),  # PPO-clip with GRPO advantages
    **{f"{name}-full": Algorithm(name, objective="full") for name in ADVANTAGES},
    "softrankpo-pooled": Algorithm("softrankpo", objective="pooled"),
}
POLICY_GRADIENT = tuple(name for name, algo in ALGORITHMS.items() if not algo.supervised)


def is_supervised(stage: str) -> bool:
    """Whether a training stage name (metrics.jsonl's ``stage``) is a supervised one."""
    return stage in ALGORITHMS and ALGORITHMS[stage].supervised
