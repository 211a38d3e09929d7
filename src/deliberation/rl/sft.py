"""Stage 2 of training (docs/design.md, section Training): oracle labels and the supervised (SFT) reference policy.

The oracle label of a decision is the action with the highest counterfactual reward, ties broken towards
the cheaper action (``types.COST_ORDER``: PERSIST < CONCEDE < RESAMPLE < REFINE).
The SFT policy minimizes cross-entropy to these labels; it initializes SoftRankPO and is its KL reference.
"""

from __future__ import annotations

import torch
from torch import Tensor

from deliberation.actions import ACTION_ORDER, action_set, by_cost


def oracle_labels(rewards: Tensor) -> Tensor:
    """(N, A) counterfactual rewards of an action set (ACTION_ORDER's first A) -> (N,) long index of the
    best action, ties broken towards the cheaper action (``COST_ORDER``)."""
    order = torch.tensor([ACTION_ORDER.index(a) for a in by_cost(action_set(rewards.shape[-1]))],
                         dtype=torch.long)  # (A,)
    best = rewards[:, order].argmax(-1)  # (N,); argmax returns the first maximum = the cheapest
    return order[best]


def sft_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean cross-entropy of logits (N, A) against oracle labels (N,) -> ()."""
    return torch.nn.functional.cross_entropy(logits, labels)
