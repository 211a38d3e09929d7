"""The meta-policy: a small cross-attention network from observations to PERSIST/REFINE/CONCEDE logits.

DESIGN.md section 1 ("Policy"): parameters shared by all agents and executed per agent; z_i and every peer
z_j are embedded by one MLP, z_i attends over its peers (multi-head scaled dot-product attention,
Vaswani et al. 2017), and an MLP head maps [own embedding, attended peers] to 3 logits ordered like
``deliberation.types.ACTIONS``. Attention pooling makes the output invariant to the order of the peers and
lets the number of peers vary (a mask marks real peers; zero peers give a zero peer summary, never NaN).

``MetaPolicy`` wraps a network for the engine (numpy in, actions out) and ``save_policy``/``load_policy``
keep checkpoints that refuse to load against a different feature set.
"""

from __future__ import annotations

import json
import math
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from deliberation.errors import DelibError
from deliberation.types import ACTIONS, Action

N_ACTIONS = len(ACTIONS)
CHECKPOINT_FORMAT = "deliberation-policy"
CHECKPOINT_FORMAT_VERSION = 1


class MetaPolicyNet(nn.Module):
    """Shared-parameter cross-attention policy: (own (B, F), peers (B, P, F), mask (B, P)) -> logits (B, 3).

    ``ignored`` feature columns are zeroed at the input, in training and at inference alike: a policy meant
    for another model can leave out a feature whose scale is the model's own (the critic's P(Yes))."""

    def __init__(self, n_features: int, hidden: int = 64, heads: int = 4, ignored: Sequence[int] = ()) -> None:
        super().__init__()
        if n_features < 1 or hidden < 1 or heads < 1 or hidden % heads:
            raise DelibError(f"MetaPolicyNet needs n_features >= 1 and hidden divisible by heads, got "
                             f"n_features={n_features}, hidden={hidden}, heads={heads}; fix the policy config")
        if any(not 0 <= i < n_features for i in ignored):
            raise DelibError(f"ignored feature columns {list(ignored)} must lie in [0, {n_features})")
        self.n_features, self.hidden, self.heads = n_features, hidden, heads
        self.ignored = tuple(sorted(set(int(i) for i in ignored)))
        keep = torch.ones(n_features)
        keep[list(self.ignored)] = 0.0
        self.register_buffer("keep", keep, persistent=False)  # (F,) 0 at ignored columns; rebuilt from arch
        self.embed = nn.Sequential(nn.Linear(n_features, hidden), nn.GELU(), nn.Linear(hidden, hidden))
        self.query = nn.Linear(hidden, hidden)
        self.key_value = nn.Linear(hidden, 2 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.head = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.GELU(), nn.Linear(hidden, N_ACTIONS))

    def forward(self, own: Tensor, peers: Tensor, peer_mask: Tensor | None = None) -> Tensor:
        """own (B, F), peers (B, P, F), peer_mask (B, P) bool (True = real peer; None = all real) -> (B, 3)."""
        h_own = self.embed(own * self.keep)  # (B, H)
        h_peers = self.embed(peers * self.keep)  # (B, P, H)
        if peer_mask is None:
            peer_mask = torch.ones(peers.shape[:2], dtype=torch.bool, device=peers.device)  # (B, P)
        context = self._attend(h_own, h_peers, peer_mask)  # (B, H)
        return self.head(torch.cat([h_own, context], dim=-1))  # (B, 3)

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
                "ignored": list(self.ignored)}


def net_from_arch(arch: Mapping[str, Any]) -> MetaPolicyNet:
    """The module ``arch()`` describes (checkpoints written before ``ignored`` existed ignore nothing)."""
    sizes = {k: int(arch[k]) for k in ("n_features", "hidden", "heads")}
    return MetaPolicyNet(**sizes, ignored=[int(i) for i in arch.get("ignored", ())])


def behaviour_probs(probs: np.ndarray, greedy: bool, epsilon: float) -> np.ndarray:
    """Mix a policy's action probabilities (A, 3) into the behaviour distribution (A, 3): the greedy one-hot
    (``greedy``) or the policy itself, mixed with uniform with weight ``epsilon`` (epsilon-exploration)."""
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
    base = np.eye(N_ACTIONS)[probs.argmax(-1)] if greedy else probs  # (A, 3)
    return (1.0 - epsilon) * base + epsilon / N_ACTIONS


@dataclass(frozen=True)
class MetaPolicy:
    """A trained network plus the feature contract it was trained on; what the engine calls per round."""

    net: MetaPolicyNet
    feature_names: tuple[str, ...] = ()
    feature_version: int = 0

    def probs(self, own: np.ndarray, peers: np.ndarray, epsilon: float = 0.0) -> np.ndarray:
        """Action probabilities (A, 3) in ACTIONS order for own (A, F) and peers (A, P, F), mixed with
        uniform by ``epsilon``."""
        own_t = torch.as_tensor(np.asarray(own, dtype=np.float32))  # (A, F)
        peers_t = torch.as_tensor(np.asarray(peers, dtype=np.float32))  # (A, P, F)
        if own_t.dim() != 2 or peers_t.dim() != 3 or peers_t.shape[::2] != own_t.shape:
            raise ValueError(f"expected own (A, F) and peers (A, P, F), got {tuple(own_t.shape)} and "
                             f"{tuple(peers_t.shape)}")
        with torch.inference_mode():
            probs = torch.softmax(self.net(own_t, peers_t).double(), dim=-1).numpy()  # (A, 3)
        return behaviour_probs(probs, greedy=False, epsilon=epsilon)

    def act(self, own: np.ndarray, peers: np.ndarray, rng: np.random.Generator, greedy: bool = False,
            epsilon: float = 0.0) -> tuple[list[Action], np.ndarray]:
        """Pick one action per agent; return the actions and their log-probabilities (A,) under the
        behaviour distribution actually sampled from (greedy or policy, mixed with uniform by epsilon)."""
        behaviour = behaviour_probs(self.probs(own, peers), greedy=greedy, epsilon=epsilon)  # (A, 3)
        cdf = np.cumsum(behaviour, axis=-1)  # (A, 3)
        draws = rng.random(len(behaviour))[:, None]  # (A, 1)
        index = np.minimum((draws >= cdf).sum(-1), N_ACTIONS - 1)  # (A,)
        chosen = behaviour[np.arange(len(index)), index]  # (A,)
        return [ACTIONS[i] for i in index], np.log(chosen)


def save_policy(path: str | os.PathLike, net: MetaPolicyNet, feature_names: Sequence[str],
                feature_version: int, meta: Mapping[str, Any]) -> Path:
    """Write a checkpoint (state dict, architecture, feature contract, ``meta`` of JSON-able values; a
    TypeError names anything else) atomically: a temporary file in the same folder is renamed over ``path``."""
    target = Path(path)
    payload = {
        "format": CHECKPOINT_FORMAT,
        "format_version": CHECKPOINT_FORMAT_VERSION,
        "arch": net.arch(),
        "state_dict": {k: v.detach().cpu().clone() for k, v in net.state_dict().items()},
        "feature_names": list(feature_names),
        "feature_version": int(feature_version),
        "meta": json.loads(json.dumps(dict(meta))),  # plain values only, so weights_only loading accepts it
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    torch.save(payload, tmp)
    os.replace(tmp, target)
    return target


def load_policy(path: str | os.PathLike, feature_names: Sequence[str], feature_version: int) -> MetaPolicy:
    """Load a checkpoint written by ``save_policy``; refuse one trained on other features (DelibError)."""
    payload = _read_checkpoint(Path(path))
    _check_features(payload, tuple(feature_names), int(feature_version))
    net = net_from_arch(payload["arch"])
    net.load_state_dict(payload["state_dict"])
    net.eval()
    return MetaPolicy(net=net, feature_names=tuple(feature_names), feature_version=int(feature_version))


def load_meta(path: str | os.PathLike) -> dict[str, Any]:
    """The ``meta`` dict stored in a checkpoint (training config, metrics summary) without building a net."""
    return dict(_read_checkpoint(Path(path))["meta"])


def _read_checkpoint(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise DelibError(f"policy checkpoint {path} not found; train one with `delib train` or pass the path "
                         "of an existing policy.pt")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, EOFError, KeyError, RuntimeError, ValueError, pickle.UnpicklingError) as err:
        raise DelibError(f"{path} is not a deliberation policy checkpoint ({type(err).__name__}); pass a "
                         "policy.pt written by `delib train`") from err
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise DelibError(f"{path} is not a deliberation policy checkpoint; pass a policy.pt written by "
                         "`delib train`")
    return payload


def _check_features(payload: Mapping[str, Any], names: tuple[str, ...], version: int) -> None:
    """Raise DelibError naming the mismatch when the checkpoint's feature contract is not the caller's."""
    stored, stored_version = tuple(payload["feature_names"]), int(payload["feature_version"])
    if stored == names and stored_version == version:
        return
    detail = ""
    if len(stored) == len(names) and stored_version == version:
        first = next(i for i, (a, b) in enumerate(zip(stored, names)) if a != b)
        detail = f" (feature {first} is {stored[first]!r} there, {names[first]!r} here)"
    raise DelibError(f"policy expects {len(stored)} features of version {stored_version}, this build produces "
                     f"{len(names)} of version {version}{detail}; retrain with delib train")
