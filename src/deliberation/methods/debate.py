"""LLM debate (Du et al. 2023, "Improving Factuality and Reasoning in Language Models through Multiagent
Debate"): every agent regenerates every round given the others' answers; no early stop; plurality vote."""

from __future__ import annotations

from typing import Sequence

from deliberation.engine import prompts
from deliberation.engine.spec import MethodSpec
from deliberation.methods.base import fixed
from deliberation.policy.rules import ConstantPolicy
from deliberation.types import Action, Message


def debate_update(question: str, own: str, peers: Sequence[str], confs: Sequence[float | None]) -> tuple[Message, ...]:
    """Du et al.'s prompt: the other agents' solutions, then "give an updated answer" (no confidences)."""
    return prompts.debate_messages(question, own, peers)


def never(keys: Sequence[str | None]) -> bool:
    return False


METHOD = fixed(MethodSpec(name="debate", policy=ConstantPolicy(Action.REFINE), update=debate_update, stop=never))
