"""Prompt version 1, ``standalone``: every critic and update prompt is a fresh two-message chat that
restates the problem and the solutions it is about (the prompts of every result made before version 2).

Nothing in such a prompt is a prefix of what the agent's own sequence already holds (the solution sits
inside a new user message), so no prefix cache can reuse the agent's earlier reading or writing.
"""

from __future__ import annotations

from typing import Sequence

from deliberation.engine.prompts.common import (SECTION, Parsed, PromptSet, UpdateStyle, chat, clip, peers_block,
                                                problem, question_of, sections, split_peers)
from deliberation.types import Message

CRITIC_QUESTION = "Is this solution correct? Answer with a single word: Yes or No."
VERBAL_QUESTION = "How confident are you that this solution is correct? Reply with a single integer from 0 to 100."


def critic(question: str, history: Sequence[Message], verbal: bool) -> tuple[Message, ...]:
    """The critic reads the problem and the solution (the last assistant turn) as a proposal."""
    ask = VERBAL_QUESTION if verbal else CRITIC_QUESTION
    return chat(f"{problem(question)}{SECTION}Proposed solution\n{clip(history[-1].content)}{SECTION}Question\n{ask}")


def update(style: UpdateStyle, question: str, history: Sequence[Message], peers: Sequence[str],
           confidences: Sequence[float | None]) -> tuple[Message, ...]:
    """The problem, the own solution, the peers' solutions (with confidences where the style shows them)."""
    shown = peers_block(peers, confidences if style.confidences else None)
    return chat(f"{problem(question)}{SECTION}Your previous solution\n{clip(history[-1].content)}"
                f"{SECTION}{style.heading}\n{shown}{SECTION}Task\n{style.task}")


def parse(messages: Sequence[Message]) -> Parsed:
    """A request built here, read back."""
    user = messages[-1].content
    parts = sections(user)
    question = question_of(user)
    if CRITIC_QUESTION in user or VERBAL_QUESTION in user:
        return Parsed("critic", question, parts.get("Proposed solution", ""), verbal=VERBAL_QUESTION in user)
    if "Task" not in parts:
        return Parsed("answer", question)
    peers = next((body for title, body in parts.items() if "other agents" in title.lower()), "")
    return Parsed("update", question, parts.get("Your previous solution", ""), split_peers(peers))


PROMPTS = PromptSet("standalone", 1, critic, update, parse)
