"""The algorithm registry, the one place an algorithm's name is read (docs/design.md, section Comparator algorithms).

An algorithm is an advantage function (an entry of ``ADVANTAGES``, the table at the bottom of
``rl/advantages.py``) plus the objective it is trained with (a key of ``OBJECTIVES``, ``rl/objectives.py``:
which rewards the function compares and the loss form); ``sft`` is the entry with no advantage: cross-entropy
on oracle labels. The table is built from the registry: each function trains under the sampled objective by
its own name (the paper's objective) and under each other objective its entry names as
``NAME-OBJECTIVE`` (``NAME-full``, ``softrankpo-pooled``; docs/design.md, section Objectives); ``ppo`` is
GRPO, always clipped.
Importing this module loads no torch (the CLI lists ``ALGORITHMS`` as ``--algo``'s choices, and reports ask
``is_supervised``): the table is read from the registry, whose functions are torch code, on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deliberation.registry import Registry

OBJECTIVES: Registry[Any] = Registry("objective", {
    "sampled": "deliberation.rl.objectives:SAMPLED",
    "full": "deliberation.rl.objectives:FULL",
    "pooled": "deliberation.rl.objectives:POOLED",
})
"""name -> "module:attribute" of an ``Objective``: the rewards ranked together and the loss that uses them."""
PLAIN = "sampled"  # the objective an advantage trains under by its own name
SFT = "sft"  # the one supervised algorithm
PPO_CLIP_EPS = 0.2  # Schulman et al. 2017, section 6.1


@dataclass(frozen=True)
class Algorithm:
    """An advantage function plus the objective it is trained with (``advantage`` None: supervised)."""

    advantage: str | None
    default_clip_eps: float | None = None  # clip used when TrainConfig.clip_eps is None (None = plain PG)
    objective: str = PLAIN  # a key of OBJECTIVES

    @property
    def supervised(self) -> bool:
        """SFT: oracle labels and cross-entropy; no advantages, no start policy."""
        return self.advantage is None

    def advantages(self, rewards: Any, groups: Any, cfg: Any) -> Any:
        """(N,) rewards and groups -> (N,) advantages, the function's params read from ``cfg`` (TrainConfig)."""
        from deliberation.rl.advantages import ADVANTAGES

        return ADVANTAGES[self.advantage](rewards, groups, cfg)

    def clip_eps(self, cfg: Any) -> float | None:
        """The PPO clip epsilon in force under ``cfg`` (TrainConfig), or None for the plain policy gradient."""
        return cfg.clip_eps if cfg.clip_eps is not None else self.default_clip_eps

    def decision_advantages(self, batch: Any, cfg: Any) -> Any:
        """Advantages of a DecisionBatch under this algorithm's objective: (N,) for the action each decision
        took, or (N, A) for every action (ACTION_ORDER)."""
        return OBJECTIVES.resolve(self.objective).advantages(self, batch, cfg)

    def policy_gradient(self, logp: Any, actions: Any, advantages: Any, behaviour_logp: Any, cfg: Any) -> Any:
        """The objective's policy-gradient loss () of log-probs (N, A) and ``decision_advantages`` rows."""
        objective = OBJECTIVES.resolve(self.objective)
        return objective.loss(logp, actions, advantages, behaviour_logp, self.clip_eps(cfg))


def algorithm_table() -> dict[str, Algorithm]:
    """name -> Algorithm, read from the advantage registry now: sft, every advantage by its name, ppo, then
    the other objectives' (NAME-full, ..., NAME-pooled)."""
    from deliberation.rl.advantages import ADVANTAGES

    unknown = {(n, o) for n, adv in ADVANTAGES.items() for o in adv.objectives if o not in OBJECTIVES}
    if unknown:
        raise ValueError(f"advantages register for unknown objectives {sorted(unknown)}; objectives: "
                         f"{', '.join(OBJECTIVES)}")
    by_objective = [(o, n) for o in OBJECTIVES for n, adv in ADVANTAGES.items() if o in adv.objectives]
    plain = {n: Algorithm(n) for o, n in by_objective if o == PLAIN}
    others = {f"{n}-{o}": Algorithm(n, objective=o) for o, n in by_objective if o != PLAIN}
    return {SFT: Algorithm(None), **plain, "ppo": Algorithm("grpo", default_clip_eps=PPO_CLIP_EPS), **others}


def policy_gradient_table() -> dict[str, Algorithm]:
    """``algorithm_table()`` without the supervised entry: the algorithms ``delib iterate`` trains."""
    return {n: a for n, a in algorithm_table().items() if not a.supervised}


ALGORITHMS: Registry[Algorithm] = Registry("algorithm", algorithm_table)
"""Read from the advantage registry at every use: listing no names loads no torch, and an advantage added to
its table (a test's) is an algorithm at once."""
POLICY_GRADIENT: Registry[Algorithm] = Registry("algorithm", policy_gradient_table)


def is_supervised(stage: str) -> bool:
    """Whether a training stage name (metrics.jsonl's ``stage``) is a supervised one (without loading torch)."""
    return stage == SFT
