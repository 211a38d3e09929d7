"""Every prompt the engine sends. Round 0's prompt (``initial_messages``) is shared by all; the critic and
update prompts come in versions, one file each, registered in ``PROMPTS`` and chosen by
``EngineConfig.prompts``:

- ``continuation`` (version 2, the default): they extend the agent's own conversation, so prefix caches
  reuse what the agent's sequence already read and wrote (``continuation.py``);
- ``standalone`` (version 1): fresh chats restating problem and solutions (every result made before
  version 2; ``standalone.py``).

The response cache keys hash the messages themselves, so a request of either version is its own key, and
round-0 answers, identical in both, stay shared.
"""

from __future__ import annotations

from typing import Sequence

from deliberation.engine.prompts.common import (DEBATE, PROBLEM_HEADER, RECONCILE, REFINE, SECTION, SYSTEM, Parsed,
                                                PromptSet, UpdateStyle, answered, initial_messages, question_in)
from deliberation.registry import lookup
from deliberation.types import Message

PROMPTS: dict[str, str] = {
    "continuation": "deliberation.engine.prompts.continuation:PROMPTS",
    "standalone": "deliberation.engine.prompts.standalone:PROMPTS",
}
DEFAULT = "continuation"


def get(name: str) -> PromptSet:
    """The prompt set registered under ``name``."""
    return lookup(PROMPTS, name, "prompt set")


def parse(messages: Sequence[Message]) -> Parsed:
    """Any request the engine builds, read back: continuation requests carry an assistant turn."""
    continues = any(m.role == "assistant" for m in messages)
    return get("continuation" if continues else "standalone").parse(messages)


__all__ = ["DEBATE", "DEFAULT", "PROBLEM_HEADER", "PROMPTS", "Parsed", "PromptSet", "RECONCILE", "REFINE", "SECTION",
           "SYSTEM", "UpdateStyle", "answered", "get", "initial_messages", "parse", "question_in"]
