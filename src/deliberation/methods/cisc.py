"""Confidence-informed self-consistency (CISC, Taubenfeld et al., 2025): self-consistency whose vote
weighs each of the k = ``--agents`` samples by softmax(confidence / T) (engine/spec.VoteWeights).

Two confidences: the critic's P(Yes) (``cisc``: one critic call per sample, recorded by ``delib tree``)
and the sample's mean token log-probability (``cisc-logprob``: no call; backends that record
log-probability summaries). The temperatures are CISC's kind of setting, fixed here before any test data:
0.1 for P(Yes) in [0, 1] and for mean log-probabilities, whose spread across samples is of that order.
"""

from __future__ import annotations

from deliberation.engine.spec import MethodSpec, VoteWeights
from deliberation.methods.base import fixed, samples_only

TEMPERATURE = 0.1
"""The softmax temperature of both confidences (see above)."""
CRITIC = fixed(MethodSpec(name="cisc", policy=None, confidence=True,
                          vote_weights=VoteWeights("critic", TEMPERATURE)), engine=samples_only)
LOGPROB = fixed(MethodSpec(name="cisc-logprob", policy=None, vote_weights=VoteWeights("logprob-mean", TEMPERATURE)),
                engine=samples_only)
