"""Sampling methods that decide how many samples to draw, through one allocation episode
(``allocate/episode.py``); ``--agents`` is the most samples they draw, as for adaptive-consistency.

- ``mpdf-allocate``: the learned allocator (``allocate/network.py``; ``--policy``: a checkpoint from
  ``delib train-allocator``, default the one trained on qwen2.5-coder-1.5b's training trees). Its team of N
  answers first (N from the checkpoint), then after every draw it chooses STOP or RESAMPLE (one sample or N,
  as trained) from the vote so far and the samples' answer log-probabilities and checked arithmetic; a
  three-move checkpoint may also DELIBERATE once, at its first decision: one round of the agreement rule's
  PERSIST / REFINE / CONCEDE among the team. The vote is plain, or weighted as the checkpoint says;
  ``--stop-at`` moves its operating point (its probability of STOP needed to stop).
- ``early-stopping-sc``: early-stopping self-consistency (ESC; Li et al., ICLR 2024): windows of
  ``--esc-window`` samples until one window agrees; the vote over every sample drawn.
"""

from __future__ import annotations

from typing import Sequence

from deliberation.allocate.episode import DELIBERATION, Allocation, run_allocation
from deliberation.allocate.moves import WindowRule
from deliberation.config import refuse_learned
from deliberation.engine.spec import MethodSpec, VoteWeights
from deliberation.errors import DelibError
from deliberation.methods.base import Method, MethodConfig, MethodRecord, samples_only
from deliberation.methods.calls import Calls
from deliberation.policy import shipped
from deliberation.types import Example

DEFAULT_ALLOCATOR = "allocate-qwen2.5-coder-1.5b"
"""The shipped allocator ``--policy`` defaults to (policy/checkpoints/; docs/results/allocation)."""


def allocator_spec(cfg: MethodConfig) -> MethodSpec:
    """mpdf-allocate's spec under ``cfg``: the checkpoint loaded and checked against ``--agents``."""
    from deliberation.allocate.network import load_allocator

    allocator = load_allocator(cfg.policy or DEFAULT_ALLOCATOR).at(cfg.stop_at)
    team = int(allocator.meta.get("team", 3))
    if cfg.engine.agents <= team:
        raise DelibError(f"mpdf-allocate draws up to --agents samples after its team of {team}; pass --agents "
                         f"above {team} (it was trained with {allocator.meta.get('limit', 12)})")
    vote = None if allocator.vote is None else VoteWeights(*allocator.vote)
    three = allocator.net.n_moves == 3
    allocation = Allocation(allocator.with_team(team), cfg.engine.agents, DELIBERATION if three else None,
                            (lambda state: allocator.choose(state, True)) if three else None, reads_summaries=True)
    return MethodSpec(name="mpdf-allocate", policy=None, vote_weights=vote, protocol=allocation)


def _check(cfg: MethodConfig, examples: Sequence[Example]) -> None:
    """Refuse the questions the allocator was trained on (its score there would be in-sample)."""
    from deliberation.allocate.network import load_allocator

    seen = set(load_allocator(cfg.policy or DEFAULT_ALLOCATOR).meta.get("questions", ()))
    refuse_learned(examples, seen, f"the allocator {cfg.policy or DEFAULT_ALLOCATOR} was trained", "train it on others")


def _record(cfg: MethodConfig) -> MethodRecord:
    name = cfg.policy or DEFAULT_ALLOCATOR
    return MethodRecord(policy_used=f"{name} {shipped.content_hash(shipped.checkpoint_path(name, allocator=True))}")


def allocation_calls(spec: MethodSpec) -> Calls:
    """The first draw, then up to the limit; a DELIBERATE adds one round of the agreement rule, at most a
    REFINE per sample drawn first (``allocate/episode.allocation_episode``)."""
    found: Allocation = spec.protocol
    first = min(found.allocator.first or found.limit, found.limit)
    return Calls((first, found.limit + (first if found.deliberation is not None else 0)))


def _esc_spec(cfg: MethodConfig) -> MethodSpec:
    return MethodSpec(name="early-stopping-sc", policy=None,
                      protocol=Allocation(WindowRule(cfg.esc_window), cfg.engine.agents))


ALLOCATE = Method(spec=allocator_spec, engine=samples_only, options=frozenset({"policy", "stop_at"}), record=_record,
                  episode=run_allocation, check=_check, calls=lambda cfg: allocation_calls(allocator_spec(cfg)),
                  about="a learned allocator draws samples until it says STOP, at most --agents (above the team "
                  "of 3), reading their answers' log-probabilities (a backend that records them) (SoftRankPO; "
                  "this project)")
ESC = Method(spec=_esc_spec, engine=samples_only, options=frozenset({"esc_window"}), episode=run_allocation,
             calls=lambda cfg: allocation_calls(_esc_spec(cfg)), earliest_stop=lambda options: options.esc_window,
             about="samples windows of --esc-window until one agrees, at most --agents (more than a window to "
             "stop early) (Li et al. 2024)")
