"""LLM debate (Du et al. 2023, "Improving Factuality and Reasoning in Language Models through Multiagent
Debate"): every agent regenerates every round given the others' answers; no early stop; plurality vote."""

from __future__ import annotations

from typing import Sequence

from deliberation.engine import prompts
from deliberation.engine.spec import MethodSpec
from deliberation.methods.base import fixed
from deliberation.policy.rules import ConstantPolicy
from deliberation.actions import Action


def never(keys: Sequence[str | None]) -> bool:
    return False


METHOD = fixed(MethodSpec(name="debate", policy=ConstantPolicy(Action.REFINE), update=prompts.DEBATE, stop=never),
               about="every agent revises every round seeing the others' answers (Du et al. 2023)")
