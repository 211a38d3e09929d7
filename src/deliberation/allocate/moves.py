"""The allocator's moves and the fixed stopping rules that take them.

An ``Allocator`` is asked after every draw (the team's N answers first) and answers with a ``Move``; it also
says how many samples a RESAMPLE draws (``step``) and how many the team draws first (``first``, None: the
team size). The fixed rules are the sampling baselines' stopping rules, expressed as allocators so that one
episode (``allocate/episode.py``) and one offline path (``allocate/paths.py``) run them all:

- early-stopping self-consistency (ESC; Li et al., ICLR 2024, "Escape Sky-high Cost: Early-stopping
  Self-Consistency for Multi-step Reasoning"): draw a window of w samples at a time and stop as soon as one
  window's answers are all the same parseable answer; the vote is over every sample drawn;
- adaptive-consistency's Beta rule (Aggarwal et al., EMNLP 2023) at a chosen threshold, one sample at a time
  (the ``adaptive-consistency`` method runs it with its own episode, engine/adaptive.py; this form lets the
  threshold be swept on training trees at no LLM cost).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from deliberation.allocate.state import State
from deliberation.engine.adaptive import settled


class Move(str, enum.Enum):
    """What an allocator does after a draw."""

    STOP = "stop"  # answer with the vote of the samples drawn
    RESAMPLE = "resample"  # draw ``step`` more samples
    DELIBERATE = "deliberate"  # one round of the paper's three actions among the team (first decision only)


MOVES: tuple[Move, ...] = (Move.STOP, Move.RESAMPLE, Move.DELIBERATE)
"""Every move, in the order of a learned allocator's logits (a two-move allocator has the first two)."""


class Allocator(Protocol):
    """Decides after each draw; ``step`` samples a RESAMPLE draws, ``first`` the first draw (None: the team)."""

    step: int
    first: int | None

    def decide(self, state: State, rng: np.random.Generator) -> Move:
        ...


@dataclass(frozen=True)
class WindowRule:
    """ESC: windows of ``window`` samples, stop when the last window is unanimous (Li et al. 2024, section 3)."""

    window: int

    @property
    def step(self) -> int:
        return self.window

    @property
    def first(self) -> int:
        return self.window

    def decide(self, state: State, rng: np.random.Generator) -> Move:
        last = state.keys[-self.window:]
        return Move.STOP if last[0] is not None and all(k == last[0] for k in last) else Move.RESAMPLE


@dataclass(frozen=True)
class BetaRule:
    """Adaptive-consistency's stopping rule at ``threshold``, one sample at a time from the first."""

    threshold: float
    step: int = 1
    first: int | None = 1

    def decide(self, state: State, rng: np.random.Generator) -> Move:
        return Move.STOP if settled(state.keys, self.threshold) else Move.RESAMPLE
