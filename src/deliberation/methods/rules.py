"""The fixed meta-policies (``deliberation.policy.rules``) as methods of their own: always-persist,
always-refine, always-concede, agreement-threshold, and, with the critic and the ``--confidence-threshold``
they read, confidence-threshold and agreement-then-confidence; with the RESAMPLE action (issue 37),
always-resample and agreement-resample."""

from __future__ import annotations

from deliberation.engine.spec import MethodSpec
from deliberation.methods.base import Method, fixed
from deliberation.policy.rules import AgreementThenConfidence, AgreementThreshold, ConfidenceThreshold, ConstantPolicy
from deliberation.types import Action

ALWAYS_PERSIST = fixed(MethodSpec(name="always-persist", policy=ConstantPolicy(Action.PERSIST)), fixed_rule=True)
ALWAYS_REFINE = fixed(MethodSpec(name="always-refine", policy=ConstantPolicy(Action.REFINE)), fixed_rule=True)
ALWAYS_CONCEDE = fixed(MethodSpec(name="always-concede", policy=ConstantPolicy(Action.CONCEDE)), fixed_rule=True)
AGREEMENT_THRESHOLD = fixed(MethodSpec(name="agreement-threshold", policy=AgreementThreshold()), fixed_rule=True)
ALWAYS_RESAMPLE = fixed(MethodSpec(name="always-resample", policy=ConstantPolicy(Action.RESAMPLE)), fixed_rule=True)
AGREEMENT_RESAMPLE = fixed(MethodSpec(name="agreement-resample", policy=AgreementThreshold(Action.RESAMPLE)),
                           fixed_rule=True)
CONFIDENCE_THRESHOLD = Method(spec=lambda cfg: MethodSpec(
    name="confidence-threshold", policy=ConfidenceThreshold(cfg.confidence_threshold), confidence=True),
    options=frozenset({"confidence_threshold"}), fixed_rule=True)
AGREEMENT_THEN_CONFIDENCE = Method(spec=lambda cfg: MethodSpec(
    name="agreement-then-confidence", policy=AgreementThenConfidence(cfg.confidence_threshold), confidence=True),
    options=frozenset({"confidence_threshold"}), fixed_rule=True)
