"""The meta-policy: a small cross-attention network from observations to meta-action logits.

docs/design.md, section Policy network: parameters shared by all agents and executed per agent; z_i and every
peer z_j are embedded by one MLP, z_i attends over its peers (multi-head scaled dot-product attention,
Vaswani et al. 2017), and an MLP head maps [own embedding, attended peers] to one logit per action of its
action set (``deliberation.actions.ACTION_SETS``: the paper's three, ordered like ``ACTIONS``, by default).
Attention pooling makes the output invariant to the order of the peers and lets the number of peers
vary (a mask marks real peers; zero peers give a zero peer summary, never NaN).

``deliberation.policy.learned`` adapts a network to the engine and ``deliberation.policy.checkpoint``
saves and loads it.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import torch
from torch import Tensor, nn

from deliberation.errors import DelibError
from deliberation.actions import ACTIONS, action_set

N_ACTIONS = len(ACTIONS)


class MetaPolicyNet(nn.Module):
    """Shared-parameter cross-attention policy: (own (B, F), peers (B, P, F), mask (B, P)) -> logits (B, A),
    A the size of its action set.

    ``ignored`` feature columns are zeroed at the input, in training and at inference alike: a policy meant
    for another model can leave out a feature whose scale is the model's own (the critic's P(Yes))."""

    def __init__(self, n_features: int, hidden: int = 64, heads: int = 4, ignored: Sequence[int] = (),
                 n_actions: int = N_ACTIONS) -> None:
        super().__init__()
        if n_features < 1 or hidden < 1 or heads < 1 or hidden % heads:
            raise DelibError(f"MetaPolicyNet needs n_features >= 1 and hidden divisible by heads, got "
                             f"n_features={n_features}, hidden={hidden}, heads={heads}; fix the policy config")
        if any(not 0 <= i < n_features for i in ignored):
            raise DelibError(f"ignored feature columns {list(ignored)} must lie in [0, {n_features})")
        action_set(n_actions)  # a head for a registered action set only (DelibError otherwise)
        self.n_features, self.hidden, self.heads, self.n_actions = n_features, hidden, heads, n_actions
        self.ignored = tuple(sorted(set(int(i) for i in ignored)))
        keep = torch.ones(n_features)
        keep[list(self.ignored)] = 0.0
        self.register_buffer("keep", keep, persistent=False)  # (F,) 0 at ignored columns; rebuilt from arch
        self.embed = nn.Sequential(nn.Linear(n_features, hidden), nn.GELU(), nn.Linear(hidden, hidden))
        self.query = nn.Linear(hidden, hidden)
        self.key_value = nn.Linear(hidden, 2 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.head = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.GELU(), nn.Linear(hidden, n_actions))

    def forward(self, own: Tensor, peers: Tensor, peer_mask: Tensor | None = None) -> Tensor:
        """own (B, F), peers (B, P, F), peer_mask (B, P) bool (True = real peer; None = all real) -> (B, A)."""
        h_own = self.embed(own * self.keep)  # (B, H)
        h_peers = self.embed(peers * self.keep)  # (B, P, H)
        if peer_mask is None:
            peer_mask = torch.ones(peers.shape[:2], dtype=torch.bool, device=peers.device)  # (B, P)
        context = self._attend(h_own, h_peers, peer_mask)  # (B, H)
        return self.head(torch.cat([h_own, context], dim=-1))  # (B, A)

    def _attend(self, h_own: Tensor, h_peers: Tensor, peer_mask: Tensor) -> Tensor:
        """Multi-head attention of the own embedding over the real peers -> (B, H); zero if none."""
        batch, n_peers = h_peers.shape[:2]
        d_head = self.hidden // self.heads
        q = self.query(h_own).view(batch, self.heads, 1, d_head)  # (B, h, 1, d)
        k, v = self.key_value(h_peers).view(batch, n_peers, 2, self.heads, d_head).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-1, -2)).squeeze(-2) / math.sqrt(d_head)  # (B, h, P)
        visible = peer_mask.unsqueeze(1)  # (B, 1, P)
        # Masked slots get the most negative finite score, then weight 0: an all-masked row yields zeros.
        scores = scores.masked_fill(~visible, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1) * visible  # (B, h, P)
        context = (weights.unsqueeze(-1) * v).sum(-2)  # (B, h, d)
        return self.out(context.reshape(batch, self.hidden))  # (B, H)

    def arch(self) -> dict[str, Any]:
        """Architecture hyper-parameters, enough to rebuild the module before loading a state dict."""
        return {"n_features": self.n_features, "hidden": self.hidden, "heads": self.heads,
                "ignored": list(self.ignored), "n_actions": self.n_actions}


def net_from_arch(arch: Mapping[str, Any]) -> MetaPolicyNet:
    """The module ``arch()`` describes (checkpoints written before ``ignored`` or ``n_actions`` existed ignore
    nothing and choose among the paper's three actions)."""
    sizes = {k: int(arch[k]) for k in ("n_features", "hidden", "heads")}
    return MetaPolicyNet(**sizes, ignored=[int(i) for i in arch.get("ignored", ())],
                         n_actions=int(arch.get("n_actions", N_ACTIONS)))
