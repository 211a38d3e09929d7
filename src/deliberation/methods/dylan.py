"""DyLAN-style debate (Liu et al. 2024, "A Dynamic LLM-Powered Agent Network"): Du et al.'s debate that
stops once more than 2/3 of the agents agree (with 3 agents: all of them)."""

from __future__ import annotations

from deliberation.deliberation import prompts
from deliberation.deliberation.consensus import share_at_least
from deliberation.deliberation.engine import MethodSpec
from deliberation.methods.base import make_run
from deliberation.methods.heuristics import ConstantPolicy
from deliberation.types import Action

SPEC = MethodSpec(
    name="dylan",
    policy=ConstantPolicy(Action.REFINE),
    update=lambda q, own, peers, confs: prompts.debate_messages(q, own, peers),
    stop=lambda keys: share_at_least(keys, 2 / 3),
)
run = make_run(lambda cfg: SPEC)
