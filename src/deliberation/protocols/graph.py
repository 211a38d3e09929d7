"""Communication graphs whose edges are learned: sampling, the final graph, pruning, the low-rank penalty.

Shared by GPTSwarm (Zhuge et al., ICML 2024, "Language Agents as Optimizable Graphs"; reference code
metauto-ai/GPTSwarm, ``swarm/optimizer/edge_optimizer/parameterization.py``) and AgentPrune (Zhang et al.,
ICLR 2025, "Cut the Crap"; reference code yanweiyue/AgentPrune, ``AgentPrune/graph/graph.py``). Each
potential edge (src, dst) has a logit; its probability is sigmoid(logit). A graph is sampled by visiting
the edges in their fixed order and drawing each with its probability, skipping (and charging nothing for)
an edge that would close a cycle, as both references do; the sample's log-probability is the sum over the
edges drawn for. The final graph keeps the edges whose probability (not logit) is above 1/2, in the same
order with the same cycle rule. Pruning zeroes the lowest-logit surviving edges (AgentPrune's magnitude
pruning).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:  # torch loads when a graph is sampled, not when a command's help is shown
    from torch import Tensor

Edge = tuple[int, int]


@dataclass(frozen=True)
class Realized:
    """A sampled (or final) graph: the edges it holds, and its log-probability under the logits (a tensor
    with a gradient when sampled for training; 0 for a final graph)."""

    edges: tuple[Edge, ...]
    logp: Any
    """A 0-dimensional torch tensor (sampled), or 0.0 (a final graph)."""

    def predecessors(self, node: int) -> list[int]:
        return [s for s, d in self.edges if d == node]


def reaches(edges: Sequence[Edge], start: int, goal: int) -> bool:
    """Whether ``goal`` is reachable from ``start`` along ``edges`` (depth-first)."""
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo += [d for s, d in edges if s == node]
    return False


def sample(potential: Sequence[Edge], logits: "Tensor", mask: Sequence[bool], rng: np.random.Generator,
           acyclic: bool = True) -> Realized:
    """Draw each unmasked edge in order with probability sigmoid(logit), skipping one that closes a cycle
    (when ``acyclic``); the log-probability sums log p or log(1 - p) over the edges drawn for."""
    import torch

    probs = torch.sigmoid(logits)  # (E,)
    chosen: list[Edge] = []
    terms = []
    for k, edge in enumerate(potential):
        if not mask[k] or (acyclic and (edge[0] == edge[1] or reaches(chosen, edge[1], edge[0]))):
            continue
        take = bool(rng.random() < float(probs[k].detach()))
        terms.append(torch.log(probs[k]) if take else torch.log1p(-probs[k]))
        chosen += [edge] if take else []
    return Realized(tuple(chosen), torch.stack(terms).sum() if terms else logits.sum() * 0.0)


def final(potential: Sequence[Edge], logits: Sequence[float], mask: Sequence[bool], acyclic: bool = True,
          threshold: float | None = 0.5) -> Realized:
    """The graph used after optimisation: every unmasked edge whose probability exceeds ``threshold`` (None:
    every unmasked edge, AgentPrune's pruned graph), in order, skipping one that closes a cycle."""
    chosen: list[Edge] = []
    for k, edge in enumerate(potential):
        keep = mask[k] and (threshold is None or 1 / (1 + np.exp(-logits[k])) > threshold)
        if keep and not (acyclic and (edge[0] == edge[1] or reaches(chosen, edge[1], edge[0]))):
            chosen.append(edge)
    return Realized(tuple(chosen), 0.0)


def prune(logits: Sequence[float], mask: Sequence[bool], rate: float) -> list[bool]:
    """The mask with round(rate * surviving) of the surviving edges of lowest logit removed (at least one
    when any survives and ``rate`` > 0): AgentPrune's one-shot magnitude pruning (magnitude = logit)."""
    alive = [k for k, m in enumerate(mask) if m]
    cut = max(1, round(rate * len(alive))) if alive and rate > 0 else 0
    dropped = set(sorted(alive, key=lambda k: (logits[k], k))[:cut])
    return [m and k not in dropped for k, m in enumerate(mask)]


def low_rank_penalty(logits: "Tensor", mask: "Tensor", n: int, delta: float) -> "Tensor":
    """AgentPrune's regulariser (its paper's Eq. 11, as its code at commit d95b52b computes it): the nuclear
    norm of the (n, n) logit matrix plus max(0, ||A - S||_F - delta), A the 0/1 mask of the topology."""
    import torch

    square = logits.reshape(n, n)
    return torch.linalg.matrix_norm(square, ord="nuc") + torch.relu(
        torch.linalg.matrix_norm(mask.reshape(n, n).to(square.dtype) - square) - delta)
