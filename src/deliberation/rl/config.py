"""Training configuration of the meta-policy (SFT and policy-gradient stages), validated on construction.

Defaults follow docs/design.md, section Training (K = 8 samples per question, SoftRankPO hard mode, KL to the SFT
policy). Every field carries a docstring; ``TrainConfig(...)`` raises a one-line DelibError that names the
bad field and a valid value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from deliberation.engine.features import FEATURE_SETS, PAPER, FeatureSet
from deliberation.errors import DelibError
from deliberation.actions import PAPER_ACTIONS, check_action_set

CHECKPOINT_NAME = "policy.pt"
"""The file a training run writes its policy to (``rl/trainer.py``); ``rl/iterate.py`` and the figures' arm
names (``report/compare_plot.short_label``) read it."""


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of ``train_sft`` and ``train_pg``."""

    algo: str = "softrankpo"
    """Algorithm, a key of ``deliberation.rl.algorithms.ALGORITHMS``: ``sft`` (supervised only) or a
    policy gradient: each advantage function ``rl/advantages.py`` registers, by its name on the sampled
    action's reward (and ``ppo``, clipped GRPO), as NAME-full on every counterfactual reward of each
    decision, as NAME-pooled (where registered) on those of all K samples; ``train_pg`` refuses sft. All
    share everything but the advantage and the objective."""

    lr: float = 3e-3
    """Adam learning rate (Kingma & Ba 2015)."""

    epochs: int = 30
    """Passes over the training decisions; steps per epoch = ceil(train decisions / batch_size)."""

    batch_size: int = 256
    """Decisions per optimizer step."""

    group_size: int | None = None
    """K, joint actions per decision ranked against each other: training keeps draws 0..K-1 of every question
    (the group-size ablation); None = every one collected (``delib collect --joint-actions``, 8 by default).
    At least 2; more than the rollouts hold is refused (``rl.data.first_samples``)."""

    tau: float = 0.0
    """SoftRankPO temperature: 0 = hard normal scores of ranks; > 0 = soft ranks (our reconstruction of the
    paper's smooth normal quantiles, see ``deliberation.rl.advantages``)."""

    kl_coef: float = 0.05
    """beta, weight of the exact KL(pi || pi_ref) over the actions of the set to the reference (SFT) policy."""

    entropy_coef: float = 0.01
    """Weight of the entropy bonus; the loss subtracts entropy_coef * H(pi)."""

    reward_scale: float = 1.0
    """Multiplies r_local + r_global before the token cost (robustness ablation; SoftRankPO, which reads only
    ranks, ignores it unless --token-cost-coef is above 0)."""

    reward: str = "round"
    """What r_local and r_global measure, a key of ``deliberation.rl.rewards.REWARDS``: ``round``, the vote
    right after the decision's round (docs/design.md, section Rewards; what rollouts hold); ``episode``, the
    team's final vote after the last round, later rounds run by the behaviour rule (tree stores only: ``--trees``)."""

    reward_components: str = "both"
    """Which reward terms count, a key of ``deliberation.rl.rewards.REWARD_COMPONENTS``: ``both`` (r_local +
    r_global, the paper's), ``local`` or ``global`` only (the paper's component ablation; tree stores only:
    rollout files hold the sum)."""

    token_cost_coef: float = 0.0
    """Subtracted per token an action spends (a REFINE call and its critic call): r = reward_scale * r_action
    - coef * tokens, so a policy can trade accuracy for cost. Only the policy-gradient reward: SFT labels
    and held-out scores use the uncosted rewards. Sampled algos cost the action taken; NAME-full and pooled
    ones cost every action and need each decision's REFINE cost (``Decision.refine_tokens``)."""

    clip_eps: float | None = 0.2
    """PPO ratio clip epsilon against the behaviour log-prob (Schulman et al. 2017); None = plain policy
    gradient -mean(A * log pi). Clipping is the default because rollouts are offline and off-policy: on a
    fixed data set the plain form keeps pushing log pi of negative-advantage actions towards -inf (the
    loss is unbounded below) and collapses the policy. ``ppo`` clips at 0.2 even when this is None, so under
    this default ``ppo`` and ``grpo`` train identically; ``--clip-eps none`` tells them apart. The NAME-full
    and pooled algos have no ratio and ignore it."""

    hidden: int = 64
    """Width of the policy network's embeddings (of a new network: one started from --init, or in ``delib
    iterate`` from a policy, keeps its own)."""

    heads: int = 4
    """Attention heads of the policy network; must divide ``hidden`` (of a new network, as ``hidden``)."""

    features: str = PAPER.name
    """The feature set the policy observes (``deliberation.engine.features.FEATURE_SETS``): ``paper``, the
    paper's meta-cognitive state, or ``signals``, with checked arithmetic and log-probability confidence
    (docs/design.md, section Zero-cost signals;
    decisions derived from tree stores only: rollout files hold the paper's)."""

    actions: str = PAPER_ACTIONS
    """The actions the policy chooses among (``deliberation.actions.ACTION_SETS``): ``paper``, PERSIST / REFINE
    / CONCEDE, or ``resample``, with RESAMPLE (a fresh independent answer,
    docs/design.md, section RESAMPLE; tree stores only)."""

    ignore_features: tuple[str, ...] = ()
    """Feature names (of the ``features`` set) the policy never sees: zeroed at its
    input in training and at inference, recorded in the checkpoint. ``agreement-structure``,
    ``reasoning-profile`` and ``confidence-signals`` name a group of features each (``FEATURE_GROUPS``,
    the state-fidelity ablation). E.g. ``confidence``, the critic's P(Yes),
    whose scale belongs to the model the rollouts came from (``confidence_vs_mean`` keeps the relative
    signal), for a policy that will run with another model."""

    seed: int = 0
    """Seeds network initialization, mini-batch order and the held-out split: same seed, same result."""

    val_fraction: float = 0.2
    """Share of questions (example_ids) held out for validation metrics; 0 = none."""

    def __post_init__(self) -> None:
        _check_algo(self.algo)
        _check_reward(self.reward, self.reward_components)
        _check(self.lr > 0, f"lr must be > 0, got {self.lr}; try 3e-3")
        _check(self.epochs >= 1, f"epochs must be >= 1, got {self.epochs}")
        _check(self.batch_size >= 1, f"batch_size must be >= 1, got {self.batch_size}; try 256")
        _check(self.group_size is None or self.group_size >= 2, f"group_size must be >= 2 (SoftRankPO ranks K "
               f"joint actions of a decision), got {self.group_size}; leave it out to rank every one collected")
        _check(self.tau >= 0, f"tau must be >= 0 (0 = hard ranks), got {self.tau}")
        for name in ("kl_coef", "entropy_coef", "token_cost_coef"):
            _check(getattr(self, name) >= 0, f"{name} must be >= 0, got {getattr(self, name)}")
        _check(self.reward_scale > 0, f"reward_scale must be > 0, got {self.reward_scale}; use 1.0")
        _check(self.clip_eps is None or 0 < self.clip_eps < 1,
               f"clip_eps must be in (0, 1) or None, got {self.clip_eps}; try 0.2")
        _check(self.hidden >= 1 and self.heads >= 1 and self.hidden % self.heads == 0,
               f"hidden ({self.hidden}) must be a positive multiple of heads ({self.heads}); try 64 and 4")
        _check(0 <= self.val_fraction < 1, f"val_fraction must be in [0, 1), got {self.val_fraction}; try 0.2")
        _check(self.features in FEATURE_SETS, f"unknown features {self.features!r}; choose one of "
               f"{', '.join(FEATURE_SETS)}")
        _check_feature_names(self.feature_set(), self.ignore_features)
        check_action_set(self.actions)
        for f in fields(self):  # infinity passes the range checks above (lr > 0), and JSON cannot hold it
            value = getattr(self, f.name)
            _check(not isinstance(value, float) or math.isfinite(value),
                   f"{f.name} must be a finite number, got {value}")

    def feature_set(self) -> FeatureSet:
        """The registered feature set ``features`` names."""
        return FEATURE_SETS[self.features]

    def ignored_columns(self) -> tuple[int, ...]:
        """Column indices of ``ignore_features`` in the feature vector (groups expanded), sorted, each once."""
        names = self.feature_set().names
        return tuple(sorted({names.index(name) for name in expand_features(self.feature_set(),
                                                                           self.ignore_features)}))


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise DelibError(f"invalid training config: {message}")


def _check_algo(algo: str) -> None:
    from deliberation.rl.algorithms import ALGORITHMS

    _check(algo in ALGORITHMS, f"unknown algo {algo!r}; choose one of {', '.join(ALGORITHMS)}")


def _check_reward(reward: str, components: str) -> None:
    from deliberation.rl.rewards import REWARD_COMPONENTS, REWARDS

    _check(reward in REWARDS, f"unknown reward {reward!r}; choose one of {', '.join(REWARDS)}")
    _check(components in REWARD_COMPONENTS,
           f"unknown reward_components {components!r}; choose one of {', '.join(REWARD_COMPONENTS)}")


def expand_features(feature_set: FeatureSet, names: tuple[str, ...]) -> tuple[str, ...]:
    """Feature names with each group name (the set's ``groups``) replaced by its features."""
    return tuple(f for name in names for f in feature_set.groups.get(name, (name,)))


def _check_feature_names(feature_set: FeatureSet, names: tuple[str, ...]) -> None:
    unknown = [n for n in names if n not in feature_set.names and n not in feature_set.groups]
    _check(not unknown, f"ignore_features names unknown features {unknown}; choose from "
           f"{', '.join(feature_set.names)} or the groups {', '.join(feature_set.groups)}")
