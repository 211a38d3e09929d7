"""Prompt version 2, ``continuation``: critic and update prompts extend the agent's own conversation.

An agent's conversation is the problem, then its current solution as the assistant turn (after a REFINE:
the whole exchange that produced it; after a CONCEDE: the adopted peer's). The critic asks, as the next
user turn, whether that solution is correct; an update turn shows the peers' solutions and asks for a
better one. So the token prefix of every critic and update request is exactly what the agent's sequence
already holds (its prompt and its own generated answer), and a prefix cache (the llamacpp backend's, vLLM's
automatic prefix caching, llama.cpp server's slot cache) reads only the new turn. Debate and ReConcile keep
the growing conversation, as Du et al. 2023's implementation does.
"""

from __future__ import annotations

from typing import Sequence

from deliberation.engine.prompts.common import (SECTION, Parsed, PromptSet, UpdateStyle, peers_block, question_in,
                                                sections, split_peers)
from deliberation.types import Message

CRITIC_QUESTION = "Is your solution above correct? Answer with a single word: Yes or No."
VERBAL_QUESTION = ("How confident are you that your solution above is correct? Reply with a single integer from "
                   "0 to 100.")


def critic(question: str, history: Sequence[Message], verbal: bool) -> tuple[Message, ...]:
    """The agent is asked, as its next turn, whether its own last solution is correct."""
    return (*history, Message("user", VERBAL_QUESTION if verbal else CRITIC_QUESTION))


def update(style: UpdateStyle, question: str, history: Sequence[Message], peers: Sequence[str],
           confidences: Sequence[float | None]) -> tuple[Message, ...]:
    """The peers' solutions (with confidences where the style shows them) and the task, as the next turn."""
    shown = peers_block(peers, confidences if style.confidences else None)
    return (*history, Message("user", f"## {style.heading}\n{shown}{SECTION}Task\n{style.task}"))


def parse(messages: Sequence[Message]) -> Parsed:
    """A request built here, read back: the own solution is the last assistant turn."""
    user = messages[-1].content
    own = next((m.content for m in reversed(messages) if m.role == "assistant"), "")
    question = question_in(messages)
    if user in (CRITIC_QUESTION, VERBAL_QUESTION):
        return Parsed("critic", question, own, verbal=user == VERBAL_QUESTION)
    if len(messages) <= 2:
        return Parsed("answer", question)
    parts = sections("\n\n" + user)  # the turn starts with its first section
    block = next((body for title, body in parts.items() if "other agents" in title.lower()), "")
    return Parsed("update", question, own, split_peers(block))


PROMPTS = PromptSet("continuation", 2, critic, update, parse)
