"""ReConcile-style discussion (Chen et al. 2024, "ReConcile: Round-Table Conference Improves Reasoning via
Consensus among Diverse LLMs"): every agent revises seeing the others' answers with their confidence,
the discussion stops at consensus, and the final vote is weighted by confidence. Our confidence is the
same critic P(Yes) MPDF uses (ReConcile's own is verbalized), so both pay the same for it."""

from __future__ import annotations

from deliberation.deliberation import prompts
from deliberation.deliberation.engine import MethodSpec
from deliberation.methods.base import make_run
from deliberation.methods.heuristics import ConstantPolicy
from deliberation.types import Action

SPEC = MethodSpec(
    name="reconcile",
    policy=ConstantPolicy(Action.REFINE),
    update=prompts.reconcile_messages,
    confidence=True,
    weighted_vote=True,
)
run = make_run(lambda cfg: SPEC)
