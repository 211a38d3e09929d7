"""ReConcile-style discussion (Chen et al. 2024, "ReConcile: Round-Table Conference Improves Reasoning via
Consensus among Diverse LLMs"): every agent revises seeing the others' answers with their confidence,
the discussion stops at consensus, and the final vote is weighted by confidence. Our confidence is the
same critic P(Yes) MPDF uses (ReConcile's own is verbalized), so both pay the same for it."""

from __future__ import annotations

from deliberation.engine import prompts
from deliberation.engine.spec import MethodSpec
from deliberation.methods.base import fixed
from deliberation.policy.rules import ConstantPolicy
from deliberation.actions import Action

METHOD = fixed(MethodSpec(name="reconcile", policy=ConstantPolicy(Action.REFINE), update=prompts.RECONCILE,
                          confidence=True, weighted_vote=True),
               about="agents revise seeing answers with confidences; confidence-weighted vote (Chen et al. 2024)")
