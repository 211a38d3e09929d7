"""Confidence-informed self-consistency (CISC, Taubenfeld et al., 2025): self-consistency whose vote
weighs each of the k = ``--agents`` samples by softmax(confidence / T) (engine/spec.VoteWeights).

Two confidences: the critic's P(Yes) (``cisc``: one critic call per sample, recorded by ``delib tree``)
and the sample's mean token log-probability (``cisc-logprob``: no call; backends that record
log-probability summaries). T is the method option ``vote_temperature``. CISC tunes it per model and
confidence method on held-out data (their Appendix D: the best T differs by orders of magnitude between
confidences), and ``delib tune-votes`` tunes it on training trees (``runs/tune_votes.py``); the default
suits a P(Yes) in [0, 1]. Departures: the log-probability confidence is the mean token log-probability of
the whole completion, not its exponential up to the answer (a monotone change the tuned T absorbs in
part); a sample without a confidence weighs as the least confident one rather than leaving the vote.
"""

from __future__ import annotations

from deliberation.engine.spec import MethodSpec, VoteWeights
from deliberation.methods.base import Method, samples_only


def cisc_method(name: str, signal: str, critic: bool, about: str) -> Method:
    """CISC under ``name`` weighing ballots by ``signal`` (``engine/signals.SIGNALS``) at the config's T;
    ``critic``: it needs the critic's calls."""
    return Method(spec=lambda cfg: MethodSpec(name=name, policy=None, confidence=critic,
                                              vote_weights=VoteWeights(signal, cfg.vote_temperature)),
                  engine=samples_only, options=frozenset({"vote_temperature"}), about=about,
                  shown=lambda cfg: cfg.engine.max_tokens if critic else None)  # the critic reads a whole sample


CRITIC = cisc_method("cisc", "critic", True, "self-consistency weighted by each sample's critic P(Yes) "
                     "(Taubenfeld et al. 2025)")
LOGPROB = cisc_method("cisc-logprob", "logprob-mean", False, "self-consistency weighted by each sample's mean token "
                      "log-probability (Taubenfeld et al. 2025)")
