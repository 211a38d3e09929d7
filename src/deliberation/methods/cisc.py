"""Confidence-informed self-consistency (CISC, Taubenfeld et al., 2025): self-consistency whose vote
weighs each of the k = ``--agents`` samples by softmax(confidence / T) (engine/spec.VoteWeights).

Two confidences: the critic's P(Yes) (``cisc``: one critic call per sample, recorded by ``delib tree``)
and the sample's mean token log-probability (``cisc-logprob``: no call; backends that record
log-probability summaries). The temperatures are CISC's kind of setting, fixed here before any test data:
0.1 for P(Yes) in [0, 1] and for mean log-probabilities, whose spread across samples is of that order.
"""

from __future__ import annotations

from dataclasses import replace

from deliberation.engine.spec import MethodSpec, VoteWeights
from deliberation.methods.base import fixed

_SAMPLES_ONLY = dict(engine=lambda e: replace(e, rounds=0))
CRITIC = fixed(MethodSpec(name="cisc", policy=None, confidence=True, vote_weights=VoteWeights("critic", 0.1)),
               **_SAMPLES_ONLY)
LOGPROB = fixed(MethodSpec(name="cisc-logprob", policy=None, vote_weights=VoteWeights("logprob-mean", 0.1)),
                **_SAMPLES_ONLY)
