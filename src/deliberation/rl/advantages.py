"""Advantage functions: SoftRankPO and the comparators it is measured against, as pure tensor functions.

Every function has the signature ``(rewards: Tensor (N,), groups: LongTensor (N,), **kw) -> Tensor (N,)``:
``groups[n]`` names the group of samples that decision ``n`` is ranked or baselined against (in training,
the K samples of one question, round and agent). Each is one entry of ``ADVANTAGES`` at the bottom of this
file, naming the TrainConfig fields it reads and the objectives it trains under; ``rl/algorithms.py`` builds
every algorithm name from ``ADVANTAGES`` (so do ``TrainConfig``'s check and ``delib train --algo``), and the
trainer never switches on the name. Adding an estimator is one function here plus its entry.

How SoftRankPO (Yang & Thomason, AAAI 2026, arXiv 2509.03817; our definition in docs/design.md, section SoftRankPO)
departs from GRPO (Shao et al. 2024, arXiv 2402.03300), whose advantage is (r - mean_g) / (std_g + eps):

1. Rank-based: only the order of the rewards inside a group matters, never their gaps, so one outlier
   reward cannot dominate a group's update.
2. Scale-free: invariant to r -> a*r + b for every a > 0 (``reward_scale`` changes nothing), where GRPO
   is invariant only up to its ``eps`` and REINFORCE not at all.
3. Bounded: in hard mode |A| <= Phi^-1(1 - 1/(2K)) (about 1.53 for K = 8) whatever the rewards are.
4. Normal-quantile-shaped: ranks are mapped through the standard normal quantile function Phi^-1, so the
   advantages of a group look like an ideal standard-normal sample (the shape GRPO's z-scores have only
   when the rewards happen to be normal) instead of the uniform spacing of raw ranks.
5. Exactly centred: advantages sum to zero in every group, and a group of equal rewards gets exactly zero
   (GRPO's eps only approximates this for near-constant groups).
6. Ties share credit: tied rewards get the mean of the normal scores of the positions they occupy.
7. Soft mode (tau > 0) replaces the hard rank by a sigmoid soft rank and re-centres; this is OUR
   reconstruction of the paper's "smooth normal quantiles" (its exact formula is not public in our
   sources), documented in docs/design.md, section SoftRankPO.

Computation is in float64 and returned in the rewards' floating dtype. Groups are padded into a
(G, Kmax) matrix so that everything is vectorized (memory O(G * Kmax^2) for the pairwise terms).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import Tensor

from deliberation.registry import Registry

GRPO_EPS = 1e-6  # GRPO's std guard (TRL's default scale_rewards epsilon is 1e-4; 1e-6 keeps it tighter)


@dataclass(frozen=True)
class Advantage:
    """An advantage function and what it reads besides the rewards and groups (an entry of ``ADVANTAGES``)."""

    fn: Callable[..., Tensor]  # (rewards (N,), groups (N,), **params) -> advantages (N,)
    params: tuple[str, ...] = ()  # TrainConfig fields passed to ``fn`` by keyword (softrankpo: tau)
    objectives: tuple[str, ...] = ("sampled", "full")
    """Keys of ``rl/algorithms.OBJECTIVES`` it trains under, each an algorithm: the sampled one as NAME, any
    other as NAME-OBJECTIVE (by default NAME-full; docs/design.md, section Objectives)."""

    def __post_init__(self) -> None:
        unread = [p for p in self.params if p not in inspect.signature(self.fn).parameters]
        if unread:
            raise ValueError(f"advantage {self.fn.__name__!r} declares {unread} but takes no such keyword")

    def __call__(self, rewards: Tensor, groups: Tensor, cfg: Any) -> Tensor:
        """(N,) advantages of (N,) rewards and groups, ``params`` read from ``cfg`` (a TrainConfig)."""
        return self.fn(rewards, groups, **{name: getattr(cfg, name) for name in self.params})


@dataclass(frozen=True)
class _Groups:
    """Index of each decision into a padded (G, Kmax) layout of its group."""

    row: Tensor  # (N,) long: group index 0..G-1
    col: Tensor  # (N,) long: position inside the group 0..K_g-1 (input order)
    counts: Tensor  # (G,) long: group sizes K_g
    mask: Tensor  # (G, Kmax) bool: slot holds a decision

    def pad(self, values: Tensor, fill: float = 0.0) -> Tensor:
        """(N,) -> (G, Kmax), empty slots set to ``fill``."""
        out = torch.full(self.mask.shape, fill, dtype=values.dtype)  # (G, Kmax)
        out[self.row, self.col] = values
        return out

    def unpad(self, padded: Tensor) -> Tensor:
        """(G, Kmax) -> (N,) in the input order."""
        return padded[self.row, self.col]

    def mean(self, padded: Tensor) -> Tensor:
        """Group means of a padded (G, Kmax) tensor -> (G, 1). Summing offsets from the group's first member
        makes the mean of a constant group exactly that constant (a plain sum / K can be off by rounding,
        which GRPO's division by std + eps would blow up to +-1)."""
        first = padded[:, :1]  # (G, 1); slot 0 is always a member
        offsets = torch.where(self.mask, padded - first, torch.zeros_like(padded))
        return first + offsets.sum(-1, keepdim=True) / self.counts.unsqueeze(-1)


def _index_groups(groups: Tensor) -> _Groups:
    """Build the padded layout: a stable sort by group keeps each group's members in input order."""
    _, row, counts = torch.unique(groups, return_inverse=True, return_counts=True)
    order = torch.argsort(row, stable=True)  # (N,)
    starts = torch.cumsum(counts, 0) - counts  # (G,)
    col = torch.empty_like(row)
    col[order] = torch.arange(row.numel()) - starts[row[order]]
    kmax = int(counts.max()) if counts.numel() else 1  # width 1 keeps reductions valid when N = 0
    mask = torch.arange(kmax).unsqueeze(0) < counts.unsqueeze(-1)  # (G, Kmax)
    return _Groups(row=row, col=col, counts=counts, mask=mask)


def _prepare(rewards: Tensor, groups: Tensor) -> tuple[Tensor, _Groups]:
    """Validate inputs; return float64 rewards (N,) and the group layout."""
    if rewards.dim() != 1 or groups.shape != rewards.shape:
        raise ValueError(f"rewards and groups must be 1-D of equal length, got {tuple(rewards.shape)} "
                         f"and {tuple(groups.shape)}")
    if not bool(torch.isfinite(rewards).all()):
        raise ValueError("rewards contain NaN or inf; fix the reward computation or drop those decisions")
    return rewards.to(torch.float64), _index_groups(groups.long())


def _out(values: Tensor, like: Tensor) -> Tensor:
    """Return in the rewards' floating dtype (the default dtype for integer rewards)."""
    return values.to(like.dtype if like.is_floating_point() else torch.get_default_dtype())


def _scale_to_unit(padded: Tensor, grp: _Groups) -> Tensor:
    """Divide each group by its largest |reward| (a positive rescale the rank functions are invariant to)
    so that differences and standard deviations of huge or tiny rewards neither overflow nor underflow."""
    size = torch.where(grp.mask, padded.abs(), torch.zeros_like(padded)).amax(-1, keepdim=True)  # (G, 1)
    return padded / torch.where(size > 0, size, torch.ones_like(size))


def _group_std(padded: Tensor, grp: _Groups) -> Tensor:
    """Population standard deviation of each group -> (G, 1)."""
    dev = torch.where(grp.mask, padded - grp.mean(padded), torch.zeros_like(padded))
    return (dev.square().sum(-1, keepdim=True) / grp.counts.unsqueeze(-1)).sqrt()


def softrankpo(rewards: Tensor, groups: Tensor, tau: float = 0.0) -> Tensor:
    """SoftRankPO advantages: normal scores of within-group ranks (hard, tau = 0) or of soft ranks (tau > 0).

    Hard: position p = 1..K of the sorted group gets Phi^-1((p - 0.5)/K); ties share the mean score of the
    positions they occupy. Soft: s_k = sum_j sigmoid((r_k - r_j) / (tau * sd)) (j = k included; sd the
    group's population std, 1 if 0), u_k = s_k/K, A_k = Phi^-1(u_k) - mean_g Phi^-1(u). Groups of one
    decision get 0.
    """
    if not tau >= 0.0:
        raise ValueError(f"tau must be >= 0, got {tau}")
    r, grp = _prepare(rewards, groups)
    padded = grp.pad(r)  # (G, Kmax)
    adv = _hard_scores(padded, grp) if tau == 0.0 else _soft_scores(_scale_to_unit(padded, grp), grp, tau)
    return _out(grp.unpad(adv), rewards)


def _hard_scores(padded: Tensor, grp: _Groups) -> Tensor:
    """Tie-averaged normal scores (G, Kmax). A decision with ``below`` smaller and ``tied`` equal rewards
    (itself included) occupies positions below+1 .. below+tied; prefix sums average their scores."""
    mine, other = padded.unsqueeze(-1), padded.unsqueeze(-2)  # (G, Kmax, 1), (G, 1, Kmax)
    valid = grp.mask.unsqueeze(-2)  # (G, 1, Kmax)
    below = ((other < mine) & valid).sum(-1)  # (G, Kmax)
    tied = ((other == mine) & valid).sum(-1).clamp(min=1)  # (G, Kmax); padding slots clamp to 1
    k = grp.counts.unsqueeze(-1).to(torch.float64)  # (G, 1)
    pos = torch.arange(1, padded.shape[-1] + 1, dtype=torch.float64)  # (Kmax,)
    scores = torch.where(grp.mask, torch.special.ndtri((pos - 0.5) / k), torch.zeros_like(padded))
    prefix = torch.nn.functional.pad(torch.cumsum(scores, -1), (1, 0))  # (G, Kmax + 1)
    high = (below + tied).clamp(max=padded.shape[-1])
    total = prefix.gather(-1, high) - prefix.gather(-1, below)  # (G, Kmax)
    scores = torch.where(grp.mask, total / tied, torch.zeros_like(padded))
    # The scores sum to 0 exactly in real arithmetic; re-centring removes the prefix sums' rounding residue,
    # so a group of equal rewards gets exactly 0.
    return torch.where(grp.mask, scores - grp.mean(scores), torch.zeros_like(padded))


def _soft_scores(padded: Tensor, grp: _Groups, tau: float) -> Tensor:
    """Centred normal quantiles of sigmoid soft ranks (G, Kmax); rewards already scaled to [-1, 1]."""
    sd = _group_std(padded, grp)  # (G, 1)
    width = (tau * torch.where(sd > 0, sd, torch.ones_like(sd))).unsqueeze(-1)  # (G, 1, 1)
    diff = padded.unsqueeze(-1) - padded.unsqueeze(-2)  # (G, Kmax, Kmax): r_k - r_j
    # diff == 0 is sigmoid(0) = 1/2 explicitly: 0 / width is NaN when tau * sd underflows to 0.
    sig = torch.where(diff == 0, torch.full_like(diff, 0.5), torch.sigmoid(diff / width))
    soft_rank = torch.where(grp.mask.unsqueeze(-2), sig, torch.zeros_like(sig)).sum(-1)  # (G, Kmax)
    u = soft_rank / grp.counts.unsqueeze(-1)  # in [1/(2K), 1 - 1/(2K)]
    quant = torch.where(grp.mask, torch.special.ndtri(u), torch.zeros_like(u))
    return torch.where(grp.mask, quant - grp.mean(quant), torch.zeros_like(u))


def grpo(rewards: Tensor, groups: Tensor, eps: float = GRPO_EPS) -> Tensor:
    """GRPO (Shao et al. 2024): (r - mean_g) / (std_g + eps), population std. Centred again after the
    division: when a group's rewards differ only by rounding (std far below eps), the rounding left in
    r - mean_g is multiplied by 1 / eps, and the second centring restores a zero sum per group."""
    r, grp = _prepare(rewards, groups)
    padded = grp.pad(r)  # (G, Kmax)
    adv = (padded - grp.mean(padded)) / (_group_std(padded, grp) + eps)  # (G, Kmax)
    return _out(grp.unpad(adv - grp.mean(adv)), rewards)


def reinforce(rewards: Tensor, groups: Tensor) -> Tensor:
    """REINFORCE (Williams 1992): the reward itself, no baseline; ``groups`` is only validated."""
    r, _ = _prepare(rewards, groups)
    return _out(r, rewards)


def reinforce_baseline(rewards: Tensor, groups: Tensor) -> Tensor:
    """REINFORCE with the group-mean baseline: r - mean_g."""
    r, grp = _prepare(rewards, groups)
    padded = grp.pad(r)  # (G, Kmax)
    return _out(grp.unpad(padded - grp.mean(padded)), rewards)


def rloo(rewards: Tensor, groups: Tensor) -> Tensor:
    """RLOO (Kool et al. 2019; Ahmadian et al. 2024): r minus the mean of the other K - 1 rewards, computed
    as K/(K-1) * (r - mean_g). Groups of one decision get 0 (there is no other sample)."""
    r, grp = _prepare(rewards, groups)
    padded = grp.pad(r)  # (G, Kmax)
    k = grp.counts.unsqueeze(-1).to(torch.float64)  # (G, 1)
    factor = torch.where(k > 1, k / (k - 1).clamp(min=1), torch.zeros_like(k))
    return _out(grp.unpad(factor * (padded - grp.mean(padded))), rewards)


ADVANTAGES: Registry[Advantage] = Registry("advantage", {
    "softrankpo": Advantage(softrankpo, ("tau",), objectives=("sampled", "full", "pooled")),
    "grpo": Advantage(grpo),
    "reinforce": Advantage(reinforce),
    "reinforce_baseline": Advantage(reinforce_baseline),
    "rloo": Advantage(rloo),
})
"""Every advantage function under its function's name; ``rl/algorithms.py`` lists the algorithms in this order."""
