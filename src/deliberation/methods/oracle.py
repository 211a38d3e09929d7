"""The oracle: per question, the best joint round-1 action in hindsight. An upper bound to report beside the
methods, not a method one can deploy (it reads the gold answer through the benchmark's scorer).

What it maximizes, per question, over all 3^N joint actions (every agent PERSIST, CONCEDE or REFINE) of
one deliberation round after round 0 (rounds = 1 and no early stop whatever the engine says, so a team
that agrees at round 0 is a candidate for REFINE too):
1. whole-episode correctness: the team's final vote scored by the benchmark's scorer, as every method's;
2. then the fewest tokens (prompt + completion of every call: round 0, REFINE calls, critic calls);
3. then the cheaper actions, agent 0 first, in the cost order PERSIST < CONCEDE < REFINE
   (docs/design.md, section Meta-actions).
The critic is on (as mpdf's), so the candidates are exactly the round-1 outcomes a learned policy can reach
from the same round 0, and the vote's confidence tie-break reads the same P(Yes). On a tree store every
candidate is recorded (``delib tree`` stores each agent's REFINE and its critic); online, requests are
memoized within the question, so the oracle costs one round 0 and one REFINE per agent, not 3^N episodes.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Sequence

import numpy as np

from deliberation.backends.base import Backend
from deliberation.benchmarks import get as get_benchmark
from deliberation.config import EngineConfig
from deliberation.engine.loop import make_context, run_episode
from deliberation.engine.spec import MethodSpec
from deliberation.methods.base import Method, MethodConfig
from deliberation.policy.rules import ConstantPolicy, JointActions
from deliberation.actions import ACTIONS, Action, by_cost
from deliberation.types import Completion, Episode, Example, GenerationRequest

SPEC = MethodSpec(name="oracle", policy=ConstantPolicy(Action.REFINE), confidence=True)
"""The candidates' spec (the refine prompt, the critic on); each candidate runs with its own joint action."""


class Memo:
    """A backend answering a request it has seen with the completion it got then (one question's candidates
    share their round 0 and REFINE calls)."""

    def __init__(self, inner: Backend) -> None:
        self.inner, self.name, self.model = inner, inner.name, inner.model
        self.supports_logprobs = inner.supports_logprobs
        self.seen: dict[GenerationRequest, Completion] = {}

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        new = list(dict.fromkeys(r for r in requests if r not in self.seen))
        self.seen.update(zip(new, self.inner.generate(new) if new else []))
        return [self.seen[r] for r in requests]

    def close(self) -> None:
        """The inner backend belongs to the caller."""


SEARCHED = ACTIONS
"""The actions the oracle tries for each agent: the paper's three, not RESAMPLE. So it bounds what a policy
over them can reach from the same round 0, not what a rule with RESAMPLE reaches (the best rule can beat it
on a question)."""


def one_round(engine: EngineConfig) -> EngineConfig:
    """The oracle's engine: one deliberation round, every candidate played out (no early stop)."""
    return replace(engine, rounds=1, early_stop=False)


def candidates(agents: int) -> list[tuple[Action, ...]]:
    """Every joint action, cheapest first (agent 0 the most significant)."""
    return list(itertools.product(by_cost(SEARCHED), repeat=agents))


def tokens(episode: Episode) -> int:
    return episode.prompt_tokens + episode.completion_tokens


def best_episode(episodes: Sequence[Episode]) -> Episode:
    """Correct first, then fewest tokens, then the earliest (cheapest) candidate."""
    return min(enumerate(episodes), key=lambda pair: (not pair[1].correct, tokens(pair[1]), pair[0]))[1]


class Oracle(Method):
    """The oracle's registry entry: ``run`` plays every candidate and keeps the best (module docstring)."""

    def run(self, example: Example, backend: Backend, cfg: MethodConfig, rng: np.random.Generator) -> Episode:
        engine = self.engine(cfg.engine)
        base = make_context(example, Memo(backend), get_benchmark(cfg.benchmark), engine, self.spec(cfg))
        episodes = [run_episode(replace(base, spec=replace(base.spec, policy=JointActions(joint)), batch_seconds=[]),
                                rng) for joint in candidates(engine.agents)]
        return best_episode(episodes)


METHOD = Oracle(spec=lambda cfg: SPEC, engine=one_round, hindsight=True,
                about="the best joint round-1 action in hindsight: an upper bound, not a method")
