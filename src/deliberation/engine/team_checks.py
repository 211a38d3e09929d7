"""Checks, before anything runs, that a team can deliberate, that a mixed team names one model per agent,
and that its prompts fit the model's context.

Why: a debate of one agent has no peers to read, and a team too large for the backend's context window
fails only after round 0 (llama.cpp refuses a prompt longer than ``n_ctx``), when minutes of generation
are spent. Both are known from the settings and the questions alone.

The context rule (an estimate, documented in docs/guides/reliability.md, "Errors and how to recover"): the
largest prompt of a deliberating team is round 1's update prompt, which holds the question, the agent's own
answer (up to ``max_tokens``) and its N - 1 peers' answers (each up to ``max_tokens``, and shown by its last
``PEER_CHAR_LIMIT`` characters). So the estimate is ``question tokens + max_tokens + (N - 1) * peer tokens +
TEMPLATE_TOKENS``, with question tokens counted as characters / ``CHARS_PER_TOKEN`` and peer tokens
``min(max_tokens, PEER_CHAR_LIMIT / CHARS_PER_TOKEN)``. A method without rounds sends the question alone,
unless it says how many tokens of answers one of its prompts shows (``Method.shown``: a graph agent its
predecessors' clipped solutions, AFlow's ensemble its whole solutions, CISC's critic the whole sample). It
must stay below the window. Later rounds of debate and ReConcile keep the growing conversation, so they can
need more: the rule is the least a run needs, not a guarantee.
"""

from __future__ import annotations

import math
from typing import Mapping

from deliberation.config import EngineConfig
from deliberation.engine.prompts.common import PEER_CHAR_LIMIT
from deliberation.errors import DelibError

CHARS_PER_TOKEN = 4
"""Characters of English text per token (OpenAI's rule of thumb; the backends count exactly later)."""
TEMPLATE_TOKENS = 200
"""The chat template, the instructions and the section headings of an update prompt."""


def check_team(method: str, engine: EngineConfig, alone: str = " (or --method cot for a single agent)") -> None:
    """Refuse a deliberating method (rounds after round 0) with a single agent: it has no peers. ``alone``:
    what runs one agent instead, where the command has it."""
    if engine.rounds > 0 and engine.agents < 2:
        raise DelibError(f"{method} deliberates between agents, but --agents {engine.agents} leaves it no peers; "
                         f"use --agents 2 or more{alone}")


def check_models(method: str, engine: EngineConfig, models: int | None) -> None:
    """Refuse a mixed team (``models``: one per agent; None for one model serving every agent) whose size
    is not the method's number of agents. A one-agent method (cot) runs agent 0's model."""
    if models is None or engine.agents in (1, models):
        return
    raise DelibError(f"the team names {models} models but {method} runs {engine.agents} agents; name one model "
                     "per agent, or leave the number of agents out (the team sets it)")


def peer_tokens(max_tokens: int) -> int:
    """The most tokens of one peer's solution a prompt shows (it is clipped to ``PEER_CHAR_LIMIT`` characters)."""
    return min(max_tokens, math.ceil(PEER_CHAR_LIMIT / CHARS_PER_TOKEN))


def prompt_estimate(question_chars: int, engine: EngineConfig, shown: int | None = None) -> int:
    """Tokens of the largest prompt of an episode, by the rule in the module docstring (``shown``: the tokens of
    answers one of the method's prompts shows, where that is not a deliberating team's)."""
    if shown is None:
        shown = engine.max_tokens + (engine.agents - 1) * peer_tokens(engine.max_tokens) if engine.rounds > 0 else 0
    return math.ceil(question_chars / CHARS_PER_TOKEN) + shown + TEMPLATE_TOKENS


def check_context(method: str, engine: EngineConfig, questions: Mapping[str, str], window: int | None,
                  shown: int | None = None) -> None:
    """Refuse settings whose estimated largest prompt does not fit ``window`` tokens (None: unknown, no
    check), naming the estimate and the ways out (``shown``: as ``prompt_estimate``); a question
    (``questions``: its name in messages -> the prompt text) too long to fit with no answer at all is named
    with its size, for no team setting helps."""
    if window is None or not questions:
        return
    name, longest = max(((n, len(q)) for n, q in questions.items()), key=lambda item: item[1])
    question_tokens = math.ceil(longest / CHARS_PER_TOKEN)
    if question_tokens + TEMPLATE_TOKENS >= window:
        raise DelibError(f"{name} is {longest} characters with its answer instruction, about {question_tokens} "
                         f"tokens: more than the model's context window of {window} tokens holds; shorten it to "
                         f"well under {(window - TEMPLATE_TOKENS) * CHARS_PER_TOKEN} characters, or use a larger "
                         "window (llamacpp: --backend-opt n_ctx=N, up to the model's training context)")
    need = prompt_estimate(longest, engine, shown)
    if need >= window:
        what, knobs = (("when the team deliberates, an agent's own answer and its peers'", "--agents or --max-tokens")
                       if shown is None else (f"the answers one of its prompts shows, about {shown} tokens",
                                              "--max-tokens"))
        raise DelibError(f"{method} with --agents {engine.agents} and --max-tokens {engine.max_tokens} can send "
                         f"prompts of about {need} tokens (the longest question and {what}), more than the "
                         f"model's context window of {window}; lower {knobs}, or raise the window (llamacpp: "
                         "--backend-opt n_ctx=N)")
