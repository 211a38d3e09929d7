"""Every prompt the engine sends. Round 0's prompt (``initial_messages``) is shared by all; the critic and
update prompts come in versions, one file each, registered in ``PROMPTS`` and chosen by
``EngineConfig.prompts``:

- ``continuation`` (version 2, the default): they extend the agent's own conversation, so prefix caches
  reuse what the agent's sequence already read and wrote (``continuation.py``);
- ``standalone`` (version 1): fresh chats restating problem and solutions (every result made before
  version 2; ``standalone.py``).

The response cache keys hash the messages themselves, so a request of either version is its own key, and
round-0 answers, identical in both, stay shared. A prompt set returns each prompt as a ``Prompt``: its
messages with what they ask and show as data, which the engine sends as the request's ``types.Purpose``.
"""

from __future__ import annotations

from deliberation.engine.prompts.common import (DEBATE, PROBLEM_HEADER, RECONCILE, REFINE, SECTION, SYSTEM, Prompt,
                                                PromptSet, UpdateStyle, answered, initial_messages)
from deliberation.registry import Registry

PROMPTS: Registry[PromptSet] = Registry("prompt set", {
    "continuation": "deliberation.engine.prompts.continuation:PROMPTS",
    "standalone": "deliberation.engine.prompts.standalone:PROMPTS",
})
DEFAULT = "continuation"


def get(name: str) -> PromptSet:
    """The prompt set registered under ``name``."""
    return PROMPTS.resolve(name)


__all__ = ["DEBATE", "DEFAULT", "PROBLEM_HEADER", "PROMPTS", "Prompt", "PromptSet", "RECONCILE", "REFINE", "SECTION",
           "SYSTEM", "UpdateStyle", "answered", "get", "initial_messages"]
