"""Stage 2 of training (DESIGN.md section 1): oracle labels and the supervised (SFT) reference policy.

The oracle label of a decision is the action with the highest counterfactual reward, ties broken towards
the cheaper action (PERSIST < CONCEDE < REFINE: CONCEDE and PERSIST need no LLM call, REFINE needs one).
The SFT policy minimizes cross-entropy to these labels; it initializes SoftRankPO and is its KL reference.
"""

from __future__ import annotations

import torch
from torch import Tensor

from deliberation.types import ACTIONS, Action

COST_ORDER: tuple[Action, ...] = (Action.PERSIST, Action.CONCEDE, Action.REFINE)  # cheapest first


def oracle_labels(rewards: Tensor) -> Tensor:
    """(N, 3) counterfactual rewards in ACTIONS order -> (N,) long index into ACTIONS of the best action,
    ties broken towards the cheaper action."""
    by_cost = torch.tensor([ACTIONS.index(a) for a in COST_ORDER], dtype=torch.long)  # (3,)
    best = rewards[:, by_cost].argmax(-1)  # (N,); argmax returns the first maximum = the cheapest
    return by_cost[best]


def sft_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean cross-entropy of logits (N, 3) against oracle labels (N,) -> ()."""
    return torch.nn.functional.cross_entropy(logits, labels)
