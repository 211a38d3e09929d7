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

from deliberation.engine.prompts.common import SECTION, Prompt, PromptSet, UpdateStyle, peers_block, shown_peers
from deliberation.types import Message, RequestKind

CRITIC_QUESTION = "Is your solution above correct? Answer with a single word: Yes or No."
VERBAL_QUESTION = ("How confident are you that your solution above is correct? Reply with a single integer from "
                   "0 to 100.")


def critic(question: str, history: Sequence[Message], verbal: bool) -> Prompt:
    """The agent is asked, as its next turn, whether its own last solution is correct."""
    ask = Message("user", VERBAL_QUESTION if verbal else CRITIC_QUESTION)
    return Prompt(RequestKind.CRITIC, (*history, ask), history[-1].content)


def update(style: UpdateStyle, question: str, history: Sequence[Message], peers: Sequence[str],
           confidences: Sequence[float | None]) -> Prompt:
    """The peers' solutions (with confidences where the style shows them) and the task, as the next turn."""
    shown = peers_block(peers, confidences if style.confidences else None)
    turn = Message("user", f"## {style.heading}\n{shown}{SECTION}Task\n{style.task}")
    return Prompt(RequestKind.UPDATE, (*history, turn), history[-1].content, shown_peers(peers))


PROMPTS = PromptSet("continuation", 2, critic, update)
