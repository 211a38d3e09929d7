"""Prompt version 1, ``standalone``: every critic and update prompt is a fresh two-message chat that
restates the problem and the solutions it is about (the prompts of every result made before version 2).

Nothing in such a prompt is a prefix of what the agent's own sequence already holds (the solution sits
inside a new user message), so no prefix cache can reuse the agent's earlier reading or writing.
"""

from __future__ import annotations

from typing import Sequence

from deliberation.engine.prompts.common import (SECTION, Prompt, PromptSet, UpdateStyle, chat, clip, peers_block,
                                                problem, shown_peers)
from deliberation.types import Message, RequestKind

CRITIC_QUESTION = "Is this solution correct? Answer with a single word: Yes or No."
VERBAL_QUESTION = "How confident are you that this solution is correct? Reply with a single integer from 0 to 100."


def critic(question: str, history: Sequence[Message], verbal: bool) -> Prompt:
    """The critic reads the problem and the solution (the last assistant turn) as a proposal."""
    ask = VERBAL_QUESTION if verbal else CRITIC_QUESTION
    own = clip(history[-1].content)
    return Prompt(RequestKind.CRITIC,
                  chat(f"{problem(question)}{SECTION}Proposed solution\n{own}{SECTION}Question\n{ask}"), own)


def update(style: UpdateStyle, question: str, history: Sequence[Message], peers: Sequence[str],
           confidences: Sequence[float | None]) -> Prompt:
    """The problem, the own solution, the peers' solutions (with confidences where the style shows them)."""
    shown = peers_block(peers, confidences if style.confidences else None)
    own = clip(history[-1].content)
    return Prompt(RequestKind.UPDATE, chat(f"{problem(question)}{SECTION}Your previous solution\n{own}"
                                 f"{SECTION}{style.heading}\n{shown}{SECTION}Task\n{style.task}"),
                  own, shown_peers(peers))


PROMPTS = PromptSet("standalone", 1, critic, update)
