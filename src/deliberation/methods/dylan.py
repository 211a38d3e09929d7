"""DyLAN-style debate (Liu et al. 2024, "A Dynamic LLM-Powered Agent Network"): Du et al.'s debate that
stops once more than 2/3 of the agents agree (with 3 agents: all of them)."""

from __future__ import annotations

from typing import Sequence

from deliberation.engine import prompts
from deliberation.engine.consensus import share_above
from deliberation.engine.spec import MethodSpec
from deliberation.methods.base import fixed
from deliberation.policy.rules import ConstantPolicy
from deliberation.actions import Action


def two_thirds_agree(keys: Sequence[str | None]) -> bool:
    return share_above(keys, 2 / 3)


METHOD = fixed(MethodSpec(name="dylan", policy=ConstantPolicy(Action.REFINE), update=prompts.DEBATE,
                          stop=two_thirds_agree),
               about="debate that stops once more than 2/3 agree (Liu et al. 2024, DyLAN)")
