"""Decision records -> padded tensors and the held-out split by question.

Training data is a sequence of ``deliberation.types.Decision`` (one per agent, round and sample of a
question). The ranking groups of SoftRankPO are the decisions that share (example_id, round, agent) across
the K samples of a question (docs/design.md, section SoftRankPO).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch import Tensor

from deliberation.errors import DelibError
from deliberation.actions import ACTION_ORDER, Action, action_set
from deliberation.types import Decision


@dataclass(frozen=True)
class DecisionBatch:
    """Decisions as aligned tensors; row n of every field is decision n."""

    own: Tensor  # (N, F) float32: the deciding agent's features z_i
    peers: Tensor  # (N, P, F) float32: peer features z_j, zero-padded to the largest peer count P
    peer_mask: Tensor  # (N, P) bool: True where the peer slot is real
    actions: Tensor  # (N,) long: index into the action set (ACTION_ORDER's first A) of the action taken
    logprobs: Tensor  # (N,) float32: behaviour log-probability of the action taken
    rewards: Tensor  # (N, A) float64: counterfactual reward of each action of the set, ACTION_ORDER, unscaled
    token_costs: Tensor  # (N,) float64: tokens spent by the action taken
    action_costs: Tensor  # (N, A) float64: tokens each action would spend, ACTION_ORDER; NaN where unknown
    groups: Tensor  # (N,) long: ranking group id of (example_id, round, agent)
    examples: tuple[str, ...]  # (N,) example_id of each decision

    def __len__(self) -> int:
        return int(self.actions.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.own.shape[-1])

    @property
    def n_actions(self) -> int:
        return int(self.rewards.shape[-1])

    def subset(self, index: Tensor) -> DecisionBatch:
        """Rows ``index`` (N',) long, in that order."""
        rows = index.tolist()
        return DecisionBatch(
            own=self.own[index], peers=self.peers[index], peer_mask=self.peer_mask[index],
            actions=self.actions[index], logprobs=self.logprobs[index], rewards=self.rewards[index],
            token_costs=self.token_costs[index], action_costs=self.action_costs[index], groups=self.groups[index],
            examples=tuple(self.examples[i] for i in rows),
        )


def tensorize(decisions: Sequence[Decision]) -> DecisionBatch:
    """Validate decisions and stack them into a DecisionBatch (raises DelibError naming the bad record)."""
    if not decisions:
        raise DelibError("no training decisions; collect rollouts first with `delib collect`")
    width = _check_decisions(decisions)
    n_peers = max(len(d.peers) for d in decisions)
    peers = np.zeros((len(decisions), n_peers, width), dtype=np.float32)  # (N, P, F)
    mask = np.zeros((len(decisions), n_peers), dtype=bool)  # (N, P)
    for n, d in enumerate(decisions):
        if d.peers:
            peers[n, : len(d.peers)] = d.peers
            mask[n, : len(d.peers)] = True
    return DecisionBatch(
        own=torch.tensor([d.own for d in decisions], dtype=torch.float32),
        peers=torch.from_numpy(peers), peer_mask=torch.from_numpy(mask),
        actions=torch.tensor([ACTION_ORDER.index(Action(d.action)) for d in decisions], dtype=torch.long),
        logprobs=torch.tensor([d.logprob for d in decisions], dtype=torch.float32),
        rewards=torch.tensor([d.rewards for d in decisions], dtype=torch.float64),
        token_costs=torch.tensor([d.token_cost for d in decisions], dtype=torch.float64),
        action_costs=_action_costs(decisions), groups=_group_ids(decisions),
        examples=tuple(d.example_id for d in decisions),
    )


def _action_costs(decisions: Sequence[Decision]) -> Tensor:
    """(N, A) tokens of each action: PERSIST and CONCEDE call nothing, REFINE costs ``refine_tokens``,
    RESAMPLE (in the four-action set) ``resample_tokens``. Older
    rollouts record only the taken action's cost; at round 1 all K samples of a (question, agent) share one
    REFINE outcome (the same round 0), so a sample that refined tells its group's cost; later rounds follow
    other histories. NaN where neither is known."""
    shared: dict[tuple[str, int, int], float] = {}
    for d in decisions:
        if Action(d.action) is Action.REFINE and d.round == 1:
            shared.setdefault((d.example_id, d.round, d.agent), d.token_cost)
    refine = [d.refine_tokens if d.refine_tokens is not None else _refine_cost(d, shared) for d in decisions]
    costs = torch.zeros(len(decisions), len(decisions[0].rewards), dtype=torch.float64)  # (N, A)
    costs[:, ACTION_ORDER.index(Action.REFINE)] = torch.tensor(refine, dtype=torch.float64)
    if costs.shape[1] > ACTION_ORDER.index(Action.RESAMPLE):
        resample = [math.nan if d.resample_tokens is None else d.resample_tokens for d in decisions]
        costs[:, ACTION_ORDER.index(Action.RESAMPLE)] = torch.tensor(resample, dtype=torch.float64)
    return costs


def _refine_cost(d: Decision, shared: dict[tuple[str, int, int], float]) -> float:
    """An older decision's REFINE cost: its own if it refined, else its round-1 group's (NaN if unknown)."""
    if Action(d.action) is Action.REFINE:
        return d.token_cost
    return shared.get((d.example_id, d.round, d.agent), math.nan)


def first_samples(decisions: Sequence[Decision], k: int | None) -> list[Decision]:
    """The decisions of samples 0..k-1 of every question (all of them when ``k`` is None): ranking groups of
    K = k samples, the group-size ablation. Asking for more samples than were collected is refused."""
    if k is None or not decisions:
        return list(decisions)
    collected: dict[str, int] = {}
    for d in decisions:
        collected[d.example_id] = max(collected.get(d.example_id, 0), d.sample + 1)
    fewest = min(collected, key=collected.__getitem__)
    if k > collected[fewest]:
        raise DelibError(f"--group-size {k} is more than the {collected[fewest]} joint actions the rollouts hold for "
                         f"question {fewest}; use at most {collected[fewest]} (or, training on rollouts, collect "
                         f"them with --joint-actions {k})")
    return [d for d in decisions if d.sample < k]


def _check_decisions(decisions: Sequence[Decision]) -> int:
    """Return the feature width F; raise DelibError on ragged widths or non-finite numbers."""
    width, n_actions = len(decisions[0].own), len(decisions[0].rewards)
    action_set(n_actions)  # rewards of a registered action set (DelibError otherwise)
    for d in decisions:
        where = f"decision (example {d.example_id!r}, sample {d.sample}, round {d.round}, agent {d.agent})"
        if len(d.own) != width or any(len(p) != width for p in d.peers):
            raise DelibError(f"{where} has features of width {len(d.own)} / peers "
                             f"{sorted({len(p) for p in d.peers})}, expected {width}; recollect the rollouts "
                             "with one feature version")
        refine = () if d.refine_tokens is None else (d.refine_tokens,)
        numbers = (*d.rewards, d.logprob, d.token_cost, *refine, *d.own, *(x for p in d.peers for x in p))
        taken = Action(d.action) in ACTION_ORDER[:n_actions]
        if len(d.rewards) != n_actions or not taken or not all(math.isfinite(x) for x in numbers):
            raise DelibError(f"{where} has a NaN/inf or malformed reward, log-prob or feature; fix or drop "
                             "it in the rollout file")
    return width


def _group_ids(decisions: Sequence[Decision]) -> Tensor:
    """(N,) long: one id per distinct (example_id, round, agent), numbered in order of first appearance."""
    ids: dict[tuple[str, int, int], int] = {}
    return torch.tensor([ids.setdefault((d.example_id, d.round, d.agent), len(ids)) for d in decisions],
                        dtype=torch.long)


def split_by_example(batch: DecisionBatch, val_fraction: float, seed: int) -> tuple[DecisionBatch, DecisionBatch]:
    """Hold out about ``val_fraction`` of the questions (never part of a question) -> (train, val).

    A question is held out when a hash of (seed, example_id) falls below ``val_fraction``, so its side never
    depends on which other questions are present: a rollout file that grows between two trainings (or a
    policy trained on an earlier snapshot and used as ``--init``) cannot move a training question into
    validation. A positive fraction holds out at least one question and keeps at least one for training."""
    names = sorted(set(batch.examples))
    if val_fraction > 0 and len(names) < 2:
        raise DelibError(f"val_fraction {val_fraction} needs decisions from at least 2 questions, got "
                         f"{len(names)}; collect more questions or set val_fraction to 0")
    held = held_out_names(names, val_fraction, seed)
    is_val = torch.tensor([e in held for e in batch.examples], dtype=torch.bool)  # (N,)
    return batch.subset(torch.nonzero(~is_val).squeeze(-1)), batch.subset(torch.nonzero(is_val).squeeze(-1))


def held_out_names(names: Sequence[str], val_fraction: float, seed: int) -> set[str]:
    """The questions whose hash is below ``val_fraction``, nudged to leave one on each side (the validation
    questions of a training run; experiments/state_actions.sh replays them)."""
    if val_fraction <= 0:
        return set()
    unit = {n: _unit_hash(seed, n) for n in names}
    held = {n for n in names if unit[n] < val_fraction}
    if not held:
        held = {min(names, key=unit.__getitem__)}
    if len(held) == len(names):
        held.remove(max(names, key=unit.__getitem__))
    return held


def _unit_hash(seed: int, name: str) -> float:
    """A number in [0, 1) fixed by (seed, name): the first 8 bytes of their SHA-256."""
    digest = hashlib.sha256(f"{seed}/{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64
