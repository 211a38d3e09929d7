"""What makes a method, as the round loop sees it: a meta-policy, an update prompt, whether confidence
is computed, a stop rule and the vote weighting (docs/design.md, section Episode). Methods differ only here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from deliberation.engine import prompts
from deliberation.engine.consensus import unanimous
from deliberation.engine.signals import SIGNALS, SUMMARY_SIGNALS
from deliberation.engine.state import Observation
from deliberation.errors import DelibError
from deliberation.actions import Action


class MetaPolicy(Protocol):
    """Chooses every agent's meta-action from the observation; returns actions and their log-probs.
    Implementations live in ``deliberation.policy``."""

    def decide(self, obs: Observation, rng: np.random.Generator) -> tuple[tuple[Action, ...], tuple[float, ...]]:
        ...


@dataclass(frozen=True)
class VoteWeights:
    """A confidence-weighted vote (CISC, Taubenfeld et al. 2025): each ballot weighs softmax(signal /
    temperature) over the team, the signal one of ``engine/signals.SIGNALS`` (``engine.loop.ballot_weights``).
    Low temperatures let the most confident answer win; high ones tend to the plain majority."""

    signal: str
    temperature: float

    def __post_init__(self) -> None:
        if self.signal not in SIGNALS:  # a method's definition error, found when it is registered
            raise DelibError(f"unknown vote signal {self.signal!r}; choose one of {', '.join(SIGNALS)}")
        if not self.temperature > 0:
            raise DelibError(f"vote temperature must be > 0, got {self.temperature}")


@dataclass(frozen=True)
class MethodSpec:
    """What makes a method: its policy, update prompt, confidence use, stop rule and vote weighting."""

    name: str
    policy: MetaPolicy | None  # None: no deliberation rounds (cot, self-consistency)
    update: prompts.UpdateStyle = prompts.REFINE
    """What a REFINE turn shows and asks; the prompt set (``EngineConfig.prompts``) frames it."""
    confidence: bool = False
    lazy_critic: bool = False
    """Call the critic only where a confidence is read (``engine.loop.critics_read``)."""
    stop: Callable[[Sequence[str | None]], bool] = unanimous
    weighted_vote: bool = False
    vote_weights: VoteWeights | None = None
    """Weigh each ballot by its confidence signal (CISC); None: one vote each (``weighted_vote`` aside)."""
    protocol: Any = None
    """The settings of a method that runs a protocol of its own (``Method.episode``): an allocator's
    ``allocate.episode.Allocation``, PHP's cap, an optimised communication graph; None for the round loop.
    Typed loosely: the engine imports none of the packages that define them."""

    @property
    def reads_summaries(self) -> bool:
        """Whether it reads completions' log-probability summaries: a vote weighed by one, or a policy whose
        features hold them (``TrainedPolicy.reads_summaries``)."""
        voting = self.vote_weights is not None and self.vote_weights.signal in SUMMARY_SIGNALS
        return voting or any(bool(getattr(part, "reads_summaries", False)) for part in (self.policy, self.protocol))
