"""What every prompt set shares: the round-0 prompt, the update styles, and what a prompt set's critic and
update functions return (``Prompt``: the messages, with the solutions they show as data).

The initial prompt is the same in every prompt set and every method, so round-0 requests (same seed) are
identical across methods and prompt versions and the response cache serves them once. Update styles follow
their sources: ``DEBATE`` Du et al. 2023 ("Improving Factuality and Reasoning in Language Models through
Multiagent Debate"); ``RECONCILE`` Chen et al. 2024 (ReConcile: answers shown with confidences); ``REFINE``
the REFINE action of Yang & Thomason 2026 (re-examine the own solution in the light of the peers').

Nothing reads a prompt's text back: the engine sends each request with its ``types.Purpose`` (what it asks,
about which question, on which solutions), so a new ``UpdateStyle`` needs only its entry here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from deliberation.types import Message, RequestKind

SYSTEM = "You are a careful expert problem solver. Reason step by step, then state the final answer."
PROBLEM_HEADER = "Problem:\n"
SECTION = "\n\n## "
PEER_CHAR_LIMIT = 2000  # keep prompts bounded: a peer's solution is shown by its last characters


@dataclass(frozen=True)
class UpdateStyle:
    """How an update prompt (a REFINE turn) shows the peers and what it asks for."""

    name: str
    heading: str  # the section that lists the peers' solutions
    task: str
    confidences: bool = False  # show each peer's confidence beside its solution


_SAME_FORMAT = "state the final answer in the same format as asked in the problem."
REFINE = UpdateStyle(
    "refine", "Solutions from other agents",
    "Re-examine your solution in the light of the other agents' solutions. Check each step; if you find a "
    f"mistake, fix it. Write a complete, improved solution and {_SAME_FORMAT}")
DEBATE = UpdateStyle(
    "debate", "These are the solutions to the problem from other agents",
    "Using the reasoning from other agents as additional advice, can you give an updated answer? Examine your "
    f"solution and that of the other agents step by step, and {_SAME_FORMAT}")
RECONCILE = UpdateStyle(
    "reconcile", "Other agents' solutions and their confidence",
    "Weigh the other agents' reasoning by its merit and their confidence. Either convince them with a "
    f"corrected solution of your own or agree with the best one. Write a complete solution and {_SAME_FORMAT}",
    confidences=True)


@dataclass(frozen=True)
class Prompt:
    """A request's messages, what they ask (``kind``) and the solutions they show, as
    shown (``own``: the agent's, ``peers``: the others'); the engine copies all but the messages into the
    request's ``types.Purpose``."""

    kind: RequestKind
    messages: tuple[Message, ...]
    own: str = ""
    peers: tuple[str, ...] = ()


Critic = Callable[[str, Sequence[Message], bool], Prompt]
Update = Callable[[UpdateStyle, str, Sequence[Message], Sequence[str], Sequence[float | None]], Prompt]


@dataclass(frozen=True)
class PromptSet:
    """One version of the critic and update prompts (registry ``engine.prompts.PROMPTS``).

    ``history`` is the conversation that produced an agent's current solution, ending with that solution as
    the assistant turn (round 0: system, problem, answer)."""

    name: str
    version: int
    """Recorded in run configs and tree manifests: stores refuse to mix versions."""
    critic: Critic
    """(question, history, verbal) -> the introspective-confidence probe."""
    update: Update
    """(style, question, history, peers' solutions, peers' confidences) -> the prompt of a REFINE call."""


def problem(question: str) -> str:
    return f"{PROBLEM_HEADER}{question}"


def clip(text: str) -> str:
    return text if len(text) <= PEER_CHAR_LIMIT else "..." + text[-PEER_CHAR_LIMIT:]


def shown_peers(peers: Sequence[str]) -> tuple[str, ...]:
    """The peers' solutions as an update prompt shows them."""
    return tuple(clip(text) for text in peers)


def peers_block(peers: Sequence[str], confidences: Sequence[float | None] | None = None) -> str:
    parts = []
    for j, text in enumerate(shown_peers(peers), start=1):
        conf = "" if confidences is None or confidences[j - 1] is None else f" (confidence {confidences[j - 1]:.2f})"
        parts.append(f"Agent {j}{conf}:\n{text}")
    return "\n\n".join(parts)


def chat(user: str) -> tuple[Message, ...]:
    return (Message("system", SYSTEM), Message("user", user))


def initial_messages(question: str, system: str = SYSTEM) -> tuple[Message, ...]:
    """Round 0: answer independently with chain of thought (the same in every prompt set; a role-playing
    protocol may give its own system prompt)."""
    return (Message("system", system), Message("user", problem(question)))


REFERENCE_TASK = ("Use the other agents' solutions as references: check them, then solve the problem step by step "
                  f"yourself and {_SAME_FORMAT}")
DECISION_SYSTEM = ("You are the top decision-maker. Given a problem and several agents' solutions, find the most "
                   "reliable answer: check the solutions, explain which is right and why, then state the final "
                   "answer.")


def referenced(question: str, now: Sequence[str], before: Sequence[str], system: str = SYSTEM) -> Prompt:
    """A fresh answer that sees other agents' solutions of this round (``now``) and of the last (``before``):
    a node of a communication graph with predecessors (GPTSwarm, AgentPrune)."""
    parts = [problem(question)]
    parts += [f"## Solutions from other agents\n{peers_block(now)}"] if now else []
    parts += [f"## Solutions from the last round\n{peers_block(before)}"] if before else []
    user = "\n\n".join([*parts, f"## Task\n{REFERENCE_TASK}"])
    messages = (Message("system", system), Message("user", user))
    return Prompt(RequestKind.UPDATE, messages, "", shown_peers([*now, *before]))


def decision(question: str, solutions: Sequence[str]) -> Prompt:
    """A decision agent's prompt (AgentPrune's FinalRefer): every agent's last solution, pick the right answer."""
    user = f"{problem(question)}\n\n## Solutions from the agents\n{peers_block(solutions)}"
    return Prompt(RequestKind.UPDATE, (Message("system", DECISION_SYSTEM), Message("user", user)), "",
                  shown_peers(solutions))


def answered(question: str, text: str) -> tuple[Message, ...]:
    """The conversation of a round-0 answer: the initial prompt and ``text`` as the assistant turn."""
    return (*initial_messages(question), Message("assistant", text))
