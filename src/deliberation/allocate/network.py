"""The learned allocator: a small MLP from the state's features to one logit per move, and its checkpoint.

The checkpoint is the project's checkpoint format (``policy/checkpoint.py``: archive checksums, field types,
weights against the arch, finite values, all verified on load) under its own format mark, so a PERSIST /
REFINE / CONCEDE policy given where an allocator is wanted (or the reverse) is named for what it is. Its
``meta`` holds what the episode needs besides the weights: ``step`` (samples a RESAMPLE draws; 0: the team
size), ``vote`` (None, or the signal and temperature of a weighted final vote), ``stop_at`` (its operating
point, default 1/2) and the training record (lambda, training questions, stores).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch
from torch import Tensor, nn

from deliberation.allocate.moves import MOVES, Move
from deliberation.allocate.state import FEATURE_NAMES, FEATURE_VERSION, State, features
from deliberation.errors import DelibError
from deliberation.policy import checkpoint as ckpt
from deliberation.policy.shipped import checkpoint_path


class AllocatorNet(nn.Module):
    """features (B, F) -> logits (B, M), M = 2 (STOP, RESAMPLE) or 3 (and DELIBERATE), ``MOVES`` order."""

    def __init__(self, n_features: int, hidden: int = 32, n_moves: int = 2) -> None:
        super().__init__()
        if n_features < 1 or hidden < 1 or n_moves not in (2, 3):
            raise DelibError(f"AllocatorNet needs n_features >= 1, hidden >= 1 and 2 or 3 moves, got "
                             f"{n_features}, {hidden}, {n_moves}")
        self.n_features, self.hidden, self.n_moves = n_features, hidden, n_moves
        self.body = nn.Sequential(nn.Linear(n_features, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                  nn.Linear(hidden, n_moves))

    def forward(self, x: Tensor) -> Tensor:
        return self.body(x)  # (B, M)

    def arch(self) -> dict[str, Any]:
        return {"n_features": self.n_features, "hidden": self.hidden, "n_moves": self.n_moves}


def net_from_arch(arch: Mapping[str, Any]) -> AllocatorNet:
    return AllocatorNet(int(arch["n_features"]), int(arch["hidden"]), int(arch["n_moves"]))


def allowed(n_moves: int, state: State, opening: bool) -> list[Move]:
    """The moves open at ``state``: DELIBERATE only to a three-move allocator at its first decision."""
    return list(MOVES[:n_moves]) if opening and not state.deliberated else list(MOVES[:2])


@dataclass(frozen=True)
class LearnedAllocator:
    """A trained allocator: it STOPs once its probability of STOP (over the moves open) reaches ``stop_at``,
    else takes the likelier of the other open moves. ``stop_at`` is its operating point: 1/2 is the greedy
    policy, higher draws more. Under SoftRankPO the reward's token price cannot set the budget (any price
    above 0 ranks a question's equally right trajectories by tokens alone: docs/results/allocation), so the
    budget is set here, at inference."""

    net: AllocatorNet
    step: int
    meta: Mapping[str, Any]
    first: int | None = None
    stop_at: float = 0.5

    def with_first(self, first: int) -> "LearnedAllocator":
        """The same allocator drawing ``first`` samples before its first decision (its team)."""
        return replace(self, first=first)

    def with_team(self, team: int) -> "LearnedAllocator":
        """The allocator for a team of ``team``: it draws the team first, and a step of 0 (a batch of the
        team) becomes the team's size, as training and the offline paths read it."""
        return replace(self, first=team, step=self.step or team)

    def at(self, stop_at: float | None) -> "LearnedAllocator":
        """The same allocator at another operating point (None: the checkpoint's)."""
        return self if stop_at is None else replace(self, stop_at=stop_at)

    def probs(self, state: State, opening: bool) -> dict[Move, float]:
        """The probability of each open move at ``state``."""
        moves = allowed(self.net.n_moves, state, opening)
        with torch.inference_mode():
            logits = self.net(torch.as_tensor(features(state))[None])[0].double()  # (M,)
        p = torch.softmax(logits[[MOVES.index(m) for m in moves]], -1).numpy()
        return dict(zip(moves, p.tolist()))

    def choose(self, state: State, opening: bool) -> Move:
        probs = self.probs(state, opening)
        if probs[Move.STOP] >= self.stop_at:
            return Move.STOP
        rest = [m for m in probs if m is not Move.STOP]
        return max(rest, key=lambda m: (probs[m], -MOVES.index(m)))

    def decide(self, state: State, rng: np.random.Generator) -> Move:
        return self.choose(state, False)

    @property
    def vote(self) -> tuple[str, float] | None:
        """The weighted final vote it was trained with: (signal, temperature), or None (the plain vote)."""
        found = self.meta.get("vote")
        return None if found is None else (str(found[0]), float(found[1]))


def save_allocator(path: str | Path, net: AllocatorNet, meta: Mapping[str, Any]) -> Path:
    """Write an allocator checkpoint; ``meta`` must hold ``step`` (0: the team size) and ``vote``."""
    if "step" not in meta or "vote" not in meta:
        raise ValueError("an allocator's meta needs 'step' and 'vote'")
    return ckpt.save_checkpoint(path, ckpt.ALLOCATOR, net, FEATURE_NAMES, FEATURE_VERSION, meta)


@functools.lru_cache(maxsize=8)
def load_allocator(name: str) -> LearnedAllocator:
    """The allocator ``name`` names (a path or a shipped name), verified, refused when it reads other features."""
    path = Path(checkpoint_path(name, allocator=True))
    payload = ckpt.read_checkpoint(path, ckpt.ALLOCATOR)
    names, version = tuple(payload["feature_names"]), int(payload["feature_version"])
    if (names, version) != (FEATURE_NAMES, FEATURE_VERSION):
        raise DelibError(f"{path} reads {len(names)} state features of version {version}, this build computes "
                         f"{len(FEATURE_NAMES)} of version {FEATURE_VERSION}; retrain it with `delib train-allocator`")
    net = ckpt.net_for(path, payload, net_from_arch, ckpt.ALLOCATOR)
    net.load_state_dict(payload["state_dict"])
    net.eval()
    meta = payload["meta"]
    step = meta.get("step")
    stop_at = meta.get("stop_at", 0.5)
    if not isinstance(step, int) or step < 0 or "vote" not in meta or not isinstance(stop_at, (int, float)):
        raise ckpt.damaged(path, "its meta lacks a whole 'step' >= 0, a 'vote' or a numeric 'stop_at'", ckpt.ALLOCATOR)
    return LearnedAllocator(net, step, meta, stop_at=float(stop_at))
