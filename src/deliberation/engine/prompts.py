"""Every prompt the engine sends, in one place.

The initial prompt is shared by every method, so round-0 requests (same seed) are identical across
methods and the response cache serves them once. Update prompts follow their sources: ``debate_messages``
Du et al. 2023 ("Improving Factuality and Reasoning in Language Models through Multiagent Debate");
``reconcile_messages`` Chen et al. 2024 (ReConcile: answers shown with confidences); ``refine_messages``
the REFINE action of Yang & Thomason 2026 (re-examine the own solution in the light of the peers').
``critic_messages`` is the introspective-confidence probe read as P(Yes).

Every user message starts with ``PROBLEM_HEADER`` followed by the question, so tools (the scripted
backend, cache inspection) can find the question in a request.
"""

from __future__ import annotations

from typing import Sequence

from deliberation.types import Message

PROMPT_VERSION = 1
"""Bumped whenever a prompt's text changes: tree stores (and their replays) record it and refuse to mix."""
SYSTEM = "You are a careful expert problem solver. Reason step by step, then state the final answer."
PROBLEM_HEADER = "Problem:\n"
SECTION = "\n\n## "
CRITIC_QUESTION = "Is this solution correct? Answer with a single word: Yes or No."
VERBAL_QUESTION = (
    "How confident are you that this solution is correct? Reply with a single integer from 0 to 100."
)
PEER_CHAR_LIMIT = 2000  # keep prompts bounded: a peer's solution is shown by its last characters


def _problem(question: str) -> str:
    return f"{PROBLEM_HEADER}{question}"


def _clip(text: str) -> str:
    return text if len(text) <= PEER_CHAR_LIMIT else "..." + text[-PEER_CHAR_LIMIT:]


def _peers_block(peers: Sequence[str], confidences: Sequence[float | None] | None = None) -> str:
    parts = []
    for j, text in enumerate(peers, start=1):
        conf = "" if confidences is None or confidences[j - 1] is None else f" (confidence {confidences[j - 1]:.2f})"
        parts.append(f"Agent {j}{conf}:\n{_clip(text)}")
    return "\n\n".join(parts)


def _chat(user: str) -> tuple[Message, ...]:
    return (Message("system", SYSTEM), Message("user", user))


def initial_messages(question: str) -> tuple[Message, ...]:
    """Round 0: answer independently with chain of thought."""
    return _chat(_problem(question))


def refine_messages(question: str, own: str, peers: Sequence[str]) -> tuple[Message, ...]:
    """REFINE: re-examine the own solution given the peers' solutions, write an improved one."""
    return _chat(
        f"{_problem(question)}{SECTION}Your previous solution\n{_clip(own)}"
        f"{SECTION}Solutions from other agents\n{_peers_block(peers)}"
        f"{SECTION}Task\nRe-examine your solution in the light of the other agents' solutions. Check each "
        "step; if you find a mistake, fix it. Write a complete, improved solution and state the final "
        "answer in the same format as asked in the problem."
    )


def debate_messages(question: str, own: str, peers: Sequence[str]) -> tuple[Message, ...]:
    """Du et al. 2023's debate update: every agent regenerates given the others' answers."""
    return _chat(
        f"{_problem(question)}{SECTION}Your previous solution\n{_clip(own)}"
        f"{SECTION}These are the solutions to the problem from other agents\n{_peers_block(peers)}"
        f"{SECTION}Task\nUsing the reasoning from other agents as additional advice, can you give an "
        "updated answer? Examine your solution and that of the other agents step by step, and state the "
        "final answer in the same format as asked in the problem."
    )


def reconcile_messages(
    question: str, own: str, peers: Sequence[str], confidences: Sequence[float | None]
) -> tuple[Message, ...]:
    """ReConcile-style discussion: peers' solutions are shown with their confidence."""
    return _chat(
        f"{_problem(question)}{SECTION}Your previous solution\n{_clip(own)}"
        f"{SECTION}Other agents' solutions and their confidence\n{_peers_block(peers, confidences)}"
        f"{SECTION}Task\nWeigh the other agents' reasoning by its merit and their confidence. Either "
        "convince them with a corrected solution of your own or agree with the best one. Write a complete "
        "solution and state the final answer in the same format as asked in the problem."
    )


def critic_messages(question: str, solution: str, verbal: bool = False) -> tuple[Message, ...]:
    """The introspective-confidence probe: P(Yes) from one token's logprobs, or a verbal 0-100."""
    ask = VERBAL_QUESTION if verbal else CRITIC_QUESTION
    return _chat(f"{_problem(question)}{SECTION}Proposed solution\n{_clip(solution)}{SECTION}Question\n{ask}")


def question_of(content: str) -> str | None:
    """The problem text inside a user message built here (None if it has no problem header)."""
    if not content.startswith(PROBLEM_HEADER):
        return None
    return content[len(PROBLEM_HEADER) :].split(SECTION, 1)[0]
