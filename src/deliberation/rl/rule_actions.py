"""Tensor twins of the fixed rules (``policy/rules.py``), read off recorded decision features (no answer keys).

A decision stores features, not answers, yet the rules' inputs are in them: ``parseable``,
``agree_share`` (share of the team holding the answer, self included), ``confidence`` and, per peer,
``agrees_with_self``. With N = 1 + the real peers, agent i's support is round(agree_share * N); a peer's
support among the peers alone is its support minus 1 when it holds i's answer. So the held-out comparison
can score the rules beside the constants (the rule that collected the data is the bar a policy must
clear). A twin is one entry of ``RULES`` at the bottom of this file, under its rule's name (a key of
``FIXED_RULES``); tests/rl/test_rule_actions.py checks every twin against its rule's policy on recorded decisions.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from deliberation.engine.state import FEATURE_NAMES
from deliberation.rl.data import DecisionBatch
from deliberation.actions import ACTIONS, Action
from deliberation.registry import Registry

PARSEABLE, SHARE, CONFIDENCE = (FEATURE_NAMES.index(n) for n in ("parseable", "agree_share", "confidence"))
AGREES = FEATURE_NAMES.index("agrees_with_self")
PERSIST, REFINE, CONCEDE = (ACTIONS.index(a) for a in (Action.PERSIST, Action.REFINE, Action.CONCEDE))

Twin = Callable[[DecisionBatch], Tensor]  # batch -> (N,) action indices (ACTION_ORDER), at the default threshold


def _choose(persist: Tensor, concede: Tensor) -> Tensor:
    """(N,) bool, (N,) bool -> (N,) action indices: PERSIST, else CONCEDE, else REFINE."""
    return torch.where(persist, PERSIST, torch.where(concede, CONCEDE, REFINE))


def agreement_threshold(batch: DecisionBatch) -> Tensor:
    """Persist when a peer shares the answer; else concede to an answer two peers share; else refine."""
    team = 1 + batch.peer_mask.sum(-1, keepdim=True)  # (N, 1)
    own_support = torch.round(batch.own[:, SHARE] * team.squeeze(-1))  # (N,)
    persist = (batch.own[:, PARSEABLE] > 0.5) & (own_support >= 2)  # (N,)
    peer_support = torch.round(batch.peers[..., SHARE] * team) - batch.peers[..., AGREES]  # (N, P)
    real = batch.peer_mask & (batch.peers[..., PARSEABLE] > 0.5)  # (N, P)
    return _choose(persist, (real & (peer_support >= 2)).any(-1))


def confidence_threshold(batch: DecisionBatch, threshold: float = 0.7) -> Tensor:
    """Persist at P(Yes) >= threshold; else concede to a more confident peer with another answer; else refine."""
    conf = batch.own[:, CONFIDENCE]  # (N,)
    persist = (batch.own[:, PARSEABLE] > 0.5) & (conf >= threshold)  # (N,)
    other = batch.peer_mask & (batch.peers[..., PARSEABLE] > 0.5) & (batch.peers[..., AGREES] < 0.5)  # (N, P)
    return _choose(persist, (other & (batch.peers[..., CONFIDENCE] > conf.unsqueeze(-1))).any(-1))


RULES: Registry[Twin] = Registry("rule twin", {
    "agreement-threshold": agreement_threshold,
    "confidence-threshold": confidence_threshold,
})
"""Fixed rule name -> its twin: the rules the held-out comparison scores."""
