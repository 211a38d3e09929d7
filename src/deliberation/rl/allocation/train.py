"""Training an allocator on precomputed paths: SFT on hindsight-optimal moves, then SoftRankPO.

The paper's recipe (oracle labels and SFT, then SoftRankPO KL-regularised to the SFT policy) with the
allocator's moves (docs/design.md, section Compute allocation):

1. Every state an allocator with this ``step`` can reach on a path is a decision point (``Table``). Its
   hindsight value is the best reward reachable from it, by dynamic programming from the cap down; the
   label is the move that reaches it (ties to the earlier move of ``MOVES``: STOP before RESAMPLE). The SFT
   policy is trained by cross-entropy on every point's label: the reference policy.
2. SoftRankPO: each epoch ``group`` trajectories per question are sampled from the current policy; a
   trajectory's reward is 1[its vote is right] - lambda * tokens / 1000; advantages are the normal scores of
   the rewards' ranks within the question's group (``rl/advantages.softrankpo``); the loss is
   -mean(A * sum of the trajectory's log-probabilities) + kl * KL(pi || pi_sft) - entropy * H(pi), the last
   two averaged over the points visited.

Departures from the paper's setting, by design: decisions are the team's (one per draw), not per agent, and
rollouts are simulated exactly over recorded samples (no behaviour policy, no importance ratio).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from deliberation.allocate.moves import MOVES, Move
from deliberation.allocate.network import AllocatorNet
from deliberation.rl.allocation.config import AllocatorTraining
from deliberation.rl.allocation.paths import Branch, Path
from deliberation.allocate.state import FEATURE_NAMES
from deliberation.rl.advantages import softrankpo

TOKEN_UNIT = 1000
"""Rewards charge lambda per this many tokens."""


@dataclass(frozen=True)
class Table:
    """Every decision point of some paths, flattened: features, which moves are open, where each leads."""

    features: np.ndarray  # (P, F)
    open: np.ndarray  # (P, M) bool
    stop_reward: np.ndarray  # (P,) reward of stopping here
    resample_to: np.ndarray  # (P,) the point a RESAMPLE leads to, -1: the cap (then ``cap_reward``)
    cap_reward: np.ndarray  # (P,)
    deliberate_to: np.ndarray  # (P,) the point DELIBERATE leads to, -1: not open
    start: np.ndarray  # (Q,) each question's first point


def reward(branch: Branch, drawn: int, lam: float) -> float:
    return float(branch.correct[drawn]) - lam * float(branch.tokens[drawn]) / TOKEN_UNIT


def decision_points(path: Path, step: int) -> list[int]:
    """Samples drawn at each decision an allocator with ``step`` faces on ``path`` (the cap excluded)."""
    size = step or path.team
    return list(range(path.team, path.limit, size))


def table(paths: Sequence[Path], cfg: AllocatorTraining) -> Table:
    """The decision points of ``paths`` under ``cfg`` (its step, its moves, its lambda)."""
    rows: dict[str, list] = {k: [] for k in ("features", "open", "stop", "to", "cap", "delib")}
    starts = []
    for path in paths:
        branches = [path.plain] + ([path.deliberated] if cfg.moves == 3 and path.deliberated is not None else [])
        at = _index(path, branches, cfg.step, len(rows["stop"]))
        starts.append(at[0, path.team])
        size = cfg.step or path.team
        for b, branch in enumerate(branches):
            for d in decision_points(path, cfg.step):
                nxt = min(d + size, path.limit)
                rows["features"].append(branch.features[d])
                opening = b == 0 and d == path.team and len(branches) == 2
                rows["open"].append([True, True, opening][: cfg.moves])
                rows["stop"].append(reward(branch, d, cfg.lam))
                rows["to"].append(at[b, nxt] if nxt < path.limit else -1)
                rows["cap"].append(reward(branch, path.limit, cfg.lam))
                rows["delib"].append(at[1, d] if opening else -1)
    return Table(np.array(rows["features"], dtype=np.float32).reshape(-1, len(FEATURE_NAMES)),
                 np.array(rows["open"], dtype=bool), np.array(rows["stop"]), np.array(rows["to"]),
                 np.array(rows["cap"]), np.array(rows["delib"]), np.array(starts))


def _index(path: Path, branches: list[Branch], step: int, base: int) -> dict[tuple[int, int], int]:
    """(branch, drawn) -> the flat index its decision point gets, numbered from ``base`` in ``table``'s order."""
    points = decision_points(path, step)
    return {(b, d): base + b * len(points) + i for b in range(len(branches)) for i, d in enumerate(points)}


def hindsight(tab: Table) -> tuple[np.ndarray, np.ndarray]:
    """(value (P,), label (P,)): the best reward reachable from each point, and the move that reaches it."""
    value = np.full(len(tab.stop_reward), np.nan)
    label = np.zeros(len(tab.stop_reward), dtype=np.int64)

    def solve(p: int) -> float:
        if np.isnan(value[p]):
            q = [tab.stop_reward[p], tab.cap_reward[p] if tab.resample_to[p] < 0 else solve(int(tab.resample_to[p]))]
            if tab.open.shape[1] == 3:
                q.append(solve(int(tab.deliberate_to[p])) if tab.open[p, 2] else -np.inf)
            label[p] = int(np.argmax(q))  # the first of equal values: the cheaper move
            value[p] = q[label[p]]
        return float(value[p])

    for p in range(len(value))[::-1]:
        solve(p)
    return value, label


def _masked(logits: torch.Tensor, open_: torch.Tensor) -> torch.Tensor:
    return logits.masked_fill(~open_, torch.finfo(logits.dtype).min)


def train_sft(tab: Table, cfg: AllocatorTraining) -> AllocatorNet:
    """The reference policy: cross-entropy on every point's hindsight label."""
    torch.manual_seed(cfg.seed)
    net = AllocatorNet(len(FEATURE_NAMES), cfg.hidden, cfg.moves)
    x, open_ = torch.as_tensor(tab.features), torch.as_tensor(tab.open)
    labels = torch.as_tensor(hindsight(tab)[1])
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    for _ in range(cfg.sft_epochs):
        loss = torch.nn.functional.cross_entropy(_masked(net(x), open_), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net


def sample_trajectories(tab: Table, probs: np.ndarray, group: int,
                        rng: np.random.Generator) -> tuple[list[list[tuple[int, int]]], np.ndarray, np.ndarray]:
    """``group`` trajectories from each question's start under ``probs`` (P, M): the (point, move) pairs of
    each, its reward, and its question's index (the SoftRankPO group)."""
    trajectories, rewards, groups = [], [], []
    cdf = np.cumsum(probs, axis=-1)  # (P, M)
    for q, start in enumerate(tab.start):
        for _ in range(group):
            p, steps = int(start), []
            while True:
                m = min(int(np.searchsorted(cdf[p], rng.random() * cdf[p, -1], side="right")), probs.shape[1] - 1)
                steps.append((p, m))
                if MOVES[m] is Move.STOP:
                    r = tab.stop_reward[p]
                    break
                nxt = int(tab.resample_to[p] if MOVES[m] is Move.RESAMPLE else tab.deliberate_to[p])
                if nxt < 0:
                    r = tab.cap_reward[p]
                    break
                p = nxt
            trajectories.append(steps)
            rewards.append(r)
            groups.append(q)
    return trajectories, np.array(rewards), np.array(groups)


def train_softrankpo(tab: Table, cfg: AllocatorTraining, reference: AllocatorNet) -> AllocatorNet:
    """SoftRankPO from ``reference`` (see the module docstring)."""
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    net = AllocatorNet(len(FEATURE_NAMES), cfg.hidden, cfg.moves)
    net.load_state_dict(reference.state_dict())
    x, open_ = torch.as_tensor(tab.features), torch.as_tensor(tab.open)
    with torch.no_grad():
        ref_logp = torch.log_softmax(_masked(reference(x), open_), -1)  # (P, M)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    for _ in range(cfg.rl_epochs):
        logp = torch.log_softmax(_masked(net(x), open_), -1)  # (P, M)
        trajectories, rewards, groups = sample_trajectories(tab, logp.exp().detach().double().numpy(), cfg.group, rng)
        adv = softrankpo(torch.as_tensor(rewards), torch.as_tensor(groups), cfg.tau).float()  # (T,)
        owner = torch.as_tensor([t for t, steps in enumerate(trajectories) for _ in steps])
        points = torch.as_tensor([p for steps in trajectories for p, _ in steps])
        moves = torch.as_tensor([m for steps in trajectories for _, m in steps])
        taken = logp[points, moves]  # (S,)
        pg = -(adv[owner] * taken).sum() / len(trajectories)
        visited = logp[points]  # (S, M)
        probs = visited.exp()
        kl = (probs * (visited - ref_logp[points])).masked_fill(~open_[points], 0.0).sum(-1).mean()
        ent = -(probs * visited).masked_fill(~open_[points], 0.0).sum(-1).mean()
        loss = pg + cfg.kl * kl - cfg.entropy * ent
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net


def train(paths: Sequence[Path], cfg: AllocatorTraining) -> tuple[AllocatorNet, AllocatorNet]:
    """(the SoftRankPO allocator, its SFT reference) trained on ``paths``."""
    torch.set_num_threads(1)
    tab = table(paths, cfg)
    reference = train_sft(tab, cfg)
    return train_softrankpo(tab, cfg, reference), reference
