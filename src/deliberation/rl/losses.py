"""Policy-gradient losses and the algorithm registry (docs/design.md, section Training).

loss = policy-gradient term + kl_coef * KL(pi || pi_ref) - entropy_coef * H(pi), where the policy-gradient
term is either plain, -mean(A * log pi(a|o)), or PPO-clipped against the behaviour log-prob
(Schulman et al. 2017), -mean(min(rho * A, clip(rho, 1 - eps, 1 + eps) * A)) with rho = pi(a|o) / mu(a|o),
for off-policy rollouts; or, for the full-information objectives, the expected advantage
-mean(sum_a pi(a|o) A(a|o)) over all A actions of the set (rl/objectives.py says why this form). The KL and
entropy are exact sums over the A actions, not sample estimates.

An algorithm is an entry of ``rl/algorithms.py`` (advantage function + objective), never a string switched
on elsewhere: the comparators share everything but these two choices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from deliberation.rl.algorithms import ALGORITHMS

if TYPE_CHECKING:
    from deliberation.rl.config import TrainConfig


@dataclass(frozen=True)
class LossTerms:
    """The scalar loss to minimize and its parts (all 0-dim tensors; ``total`` carries the graph)."""

    total: Tensor
    policy_gradient: Tensor
    kl: Tensor
    entropy: Tensor


def policy_gradient(logp: Tensor, actions: Tensor, advantages: Tensor, behaviour_logp: Tensor,
                    clip_eps: float | None) -> Tensor:
    """logp (N, A) log pi, actions (N,), advantages (N,), behaviour_logp (N,) -> () surrogate loss."""
    taken = logp.gather(-1, actions.unsqueeze(-1)).squeeze(-1)  # (N,) log pi(a|o)
    adv = advantages.to(logp.dtype)  # (N,)
    if clip_eps is None:
        return -(adv * taken).mean()
    ratio = torch.exp(taken - behaviour_logp.to(logp.dtype))  # (N,) pi / mu
    clipped = ratio.clamp(1.0 - clip_eps, 1.0 + clip_eps)  # (N,)
    return -torch.minimum(ratio * adv, clipped * adv).mean()


def expected_advantage(logp: Tensor, actions: Tensor, advantages: Tensor, behaviour_logp: Tensor,
                       clip_eps: float | None) -> Tensor:
    """logp (N, A), advantages (N, A) -> () the negated expected advantage -mean(sum_a pi(a|o) A(a|o)).

    ``policy_gradient``'s signature; ``actions``, ``behaviour_logp`` and ``clip_eps`` are unused: every action
    is scored, so nothing is sampled and no importance ratio corrects for the behaviour policy."""
    if advantages.shape != logp.shape:
        raise ValueError(f"the expected-advantage loss needs one advantage per action, shape {tuple(logp.shape)}, "
                         f"got {tuple(advantages.shape)}")
    return -(logp.exp() * advantages.to(logp.dtype)).sum(-1).mean()


def kl_divergence(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """Exact mean KL(pi || pi_ref) over the batch from log-probs (N, A) and (N, A) -> ()."""
    return (logp.exp() * (logp - ref_logp)).sum(-1).mean()


def entropy(logp: Tensor) -> Tensor:
    """Mean entropy H(pi) over the batch from log-probs (N, A) -> ()."""
    return -(logp.exp() * logp).sum(-1).mean()


def policy_loss(logits: Tensor, ref_logits: Tensor | None, actions: Tensor, advantages: Tensor,
                behaviour_logp: Tensor, cfg: TrainConfig) -> LossTerms:
    """The full policy loss of ``cfg.algo`` for logits (N, A); ``ref_logits`` (N, A) or None (no KL term);
    ``advantages`` (N,) of the taken actions or (N, A) of every action, as the algorithm's objective gives."""
    logp = torch.log_softmax(logits, dim=-1)  # (N, A)
    pg = ALGORITHMS[cfg.algo].policy_gradient(logp, actions, advantages, behaviour_logp, cfg)
    kl = kl_divergence(logp, torch.log_softmax(ref_logits, -1)) if ref_logits is not None else logp.new_zeros(())
    ent = entropy(logp)
    return LossTerms(total=pg + cfg.kl_coef * kl - cfg.entropy_coef * ent, policy_gradient=pg, kl=kl, entropy=ent)
