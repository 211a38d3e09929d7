"""One deliberation round as a fixed workload, for the prefix-reuse measurement and its tests
(docs/design.md, section Models and speed).

The round is MPDF's most expensive path for a team: round 0 (every agent answers), a critic pass on every
answer, a REFINE by every agent (its own conversation plus its peers' solutions) and a critic pass on every
refined answer. The prompts are the engine's own (``engine.prompts``, the prompt set named), so a prefix
cache sees exactly the token prefixes a real run sends; the requests go to the backend directly, without
the engine's bookkeeping, because only the model's work is being timed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

from deliberation.backends.base import Backend
from deliberation.engine import prompts
from deliberation.engine.confidence import critic_request
from deliberation.types import Completion, GenerationRequest, Message


@dataclass(frozen=True)
class RoundTrace:
    """What one round sent and got back, stage by stage (round 0, critic, REFINE, critic), and its time."""

    stages: tuple[tuple[Completion, ...], ...]  # 4 stages x agents
    seconds: float

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(c.text for stage in self.stages for c in stage)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for stage in self.stages for c in stage)

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for stage in self.stages for c in stage)


def timed_prefix_round(backend: Backend, question: str, agents: int = 3, max_tokens: int = 256,
                       temperature: float = 0.7, seed: int = 0, prompt_set: str = prompts.DEFAULT) -> RoundTrace:
    """Round 0, critic, REFINE and critic for ``agents`` agents on ``question``; agent i samples with seed
    ``seed + i`` as the engine's round 0 does."""
    chosen = prompts.get(prompt_set)
    start = time.perf_counter()

    def ask(conversations: Sequence[tuple[Message, ...]]) -> list[Completion]:
        return backend.generate([GenerationRequest(c, max_tokens, temperature, seed=seed + i)
                                 for i, c in enumerate(conversations)])

    def critic(histories: Sequence[tuple[Message, ...]]) -> list[Completion]:
        return backend.generate([critic_request(chosen.critic(question, h, False).messages, False) for h in histories])

    first = ask([prompts.initial_messages(question)] * agents)
    histories = [prompts.answered(question, c.text) for c in first]
    checked = critic(histories)
    updates = [chosen.update(prompts.REFINE, question, h, _peers(first, i), [None] * (agents - 1)).messages
               for i, h in enumerate(histories)]
    refined = ask(updates)
    rechecked = critic([(*u, Message("assistant", c.text)) for u, c in zip(updates, refined)])
    stages = tuple(tuple(s) for s in (first, checked, refined, rechecked))
    return RoundTrace(stages, time.perf_counter() - start)


def _peers(answers: Sequence[Completion], agent: int) -> list[str]:
    return [c.text for j, c in enumerate(answers) if j != agent]
