"""LLM debate (Du et al. 2023, "Improving Factuality and Reasoning in Language Models through Multiagent
Debate"): every agent regenerates every round given the others' answers; no early stop; plurality vote."""

from __future__ import annotations

from deliberation.deliberation import prompts
from deliberation.deliberation.engine import MethodSpec
from deliberation.methods.base import make_run
from deliberation.methods.heuristics import ConstantPolicy
from deliberation.types import Action

SPEC = MethodSpec(
    name="debate",
    policy=ConstantPolicy(Action.REFINE),
    update=lambda q, own, peers, confs: prompts.debate_messages(q, own, peers),
    stop=lambda keys: False,
)
run = make_run(lambda cfg: SPEC)
