"""Fixed meta-policies: the baselines a learned policy must beat (docs/design.md, section Fixed rules),
and their registry.

Each is a ``MetaPolicy`` (``decide(obs, rng) -> (actions, logprobs)``; deterministic, so every log-prob
is 0): a constant action (always-persist, always-refine, always-concede, always-resample; debate, ReConcile
and DyLAN are always-refine with their own prompts), confidence-threshold, agreement-threshold (and its
RESAMPLE form, agreement-resample) and agreement-then-confidence.
Agreement-threshold is the bar to clear: on GSM8K with qwen2.5-coder-1.5b it beat debate at two thirds of its
tokens (docs/design.md, section Fixed rules). ``JointActions`` fixes each agent's action (the oracle's candidates).

``FIXED_RULES`` registers the rules by name; adding a rule is its entry there: ``methods/rules.py`` makes
each a method, ``delib tune-rules`` puts each on its grid (``runs/tune_rules.py``), and a rule may have a
tensor twin over recorded decision features (``rl/rule_actions.py``, checked against the policy by
tests/rl/test_rule_actions.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from deliberation.engine.consensus import support
from deliberation.engine.spec import MetaPolicy
from deliberation.engine.state import Observation
from deliberation.actions import ACTION_SETS, PAPER_ACTIONS, Action
from deliberation.registry import Registry

Decided = tuple[tuple[Action, ...], tuple[float, ...]]


@dataclass(frozen=True)
class ConstantPolicy:
    """Every agent takes ``action`` every round."""

    action: Action

    def decide(self, obs: Observation, rng: np.random.Generator) -> Decided:
        return (self.action,) * len(obs.views), (0.0,) * len(obs.views)


@dataclass(frozen=True)
class ConfidenceThreshold:
    """Persist when the critic's P(Yes) is at least ``threshold``; else concede to a more confident peer
    with another answer; else refine."""

    threshold: float = 0.7

    def decide(self, obs: Observation, rng: np.random.Generator) -> Decided:
        return tuple(self._one(obs, i) for i in range(len(obs.views))), (0.0,) * len(obs.views)

    def _one(self, obs: Observation, i: int) -> Action:
        conf = [0.5 if v.confidence is None else v.confidence for v in obs.views]
        if obs.views[i].key is not None and conf[i] >= self.threshold:
            return Action.PERSIST
        better = [j for j, v in enumerate(obs.views) if v.key not in (None, obs.views[i].key) and conf[j] > conf[i]]
        return Action.CONCEDE if better else Action.REFINE


@dataclass(frozen=True)
class AgreementThreshold:
    """Persist when a peer shares the answer; else concede to an answer two peers share; else ``fallback``:
    REFINE (the agreement rule), or RESAMPLE (agreement-resample: a lone answer is replaced by a fresh
    sample, adaptive sampling's move within the team; docs/design.md, section RESAMPLE)."""

    fallback: Action = Action.REFINE

    def decide(self, obs: Observation, rng: np.random.Generator) -> Decided:
        return tuple(agreement_action(obs, i, self.fallback) for i in range(len(obs.views))), (0.0,) * len(obs.views)


@dataclass(frozen=True)
class AgreementThenConfidence:
    """Persist when a peer shares the answer; else persist when the critic's P(Yes) is at least
    ``threshold``; else concede to an answer two peers share; else refine. The agreement rule, with a lone
    but confident agent kept from conceding."""

    threshold: float = 0.7

    def decide(self, obs: Observation, rng: np.random.Generator) -> Decided:
        return tuple(self._one(obs, i) for i in range(len(obs.views))), (0.0,) * len(obs.views)

    def _one(self, obs: Observation, i: int) -> Action:
        own = obs.views[i]
        confident = own.key is not None and (0.5 if own.confidence is None else own.confidence) >= self.threshold
        return Action.PERSIST if confident else agreement_action(obs, i)


def agreement_action(obs: Observation, i: int, fallback: Action = Action.REFINE) -> Action:
    """Agent i under the agreement rule: persist when a peer shares its answer, else concede to an answer two
    peers share, else ``fallback``."""
    keys = [v.key for v in obs.views]
    if keys[i] is not None and support(keys, keys[i]) >= 2:
        return Action.PERSIST
    peer_keys = [k for j, k in enumerate(keys) if j != i and k is not None]
    if any(support(peer_keys, k) >= 2 for k in peer_keys):
        return Action.CONCEDE
    return fallback


@dataclass(frozen=True)
class JointActions:
    """Agent i takes ``actions[i]`` in every round, whatever it observes (one joint action of the oracle)."""

    actions: tuple[Action, ...]

    def decide(self, obs: Observation, rng: np.random.Generator) -> Decided:
        return self.actions, (0.0,) * len(self.actions)


@dataclass(frozen=True)
class FixedRule:
    """A registered fixed rule (an entry of ``FIXED_RULES``)."""

    policy: Callable[[float], MetaPolicy]
    """The policy at a ``--confidence-threshold`` (a rule that reads none ignores it)."""
    simplicity: int
    """Its rank in ``delib tune-rules``' last tie-break, lower = simpler (docs/results/paired/PREREGISTRATION.md
    orders the paper's six; the ranks leave room for a rule between two)."""
    confidence: bool = False
    """Reads the critic's P(Yes) against the threshold: its method calls the critic and takes
    ``--confidence-threshold``, and the tune grid tries it at every threshold."""
    about: str = ""
    """What it does, in one line (``delib run --help``)."""
    actions: str = PAPER_ACTIONS
    """The smallest action set (``actions.ACTION_SETS``) holding every action it takes: only the default tune
    grid of that set or a larger one may name it (``runs/tune_rules.DEFAULT_GRIDS``; RESAMPLE needs stores with
    2N round-0 samples)."""

    def within(self, actions: str) -> bool:
        """Whether every action this rule takes is in the action set ``actions``."""
        return set(ACTION_SETS[self.actions]) <= set(ACTION_SETS[actions])


FIXED_RULES: Registry[FixedRule] = Registry("fixed rule", {
    "always-persist": FixedRule(lambda _: ConstantPolicy(Action.PERSIST), 10, about="fixed rule: every agent keeps "
                                "its answer"),
    "always-refine": FixedRule(lambda _: ConstantPolicy(Action.REFINE), 20, about="fixed rule: every agent refines"),
    "always-concede": FixedRule(lambda _: ConstantPolicy(Action.CONCEDE), 30, about="fixed rule: every agent "
                                "concedes to a peer"),
    "confidence-threshold": FixedRule(ConfidenceThreshold, 50, confidence=True, about="fixed rule: persist at critic "
                                      "P(Yes) >= --confidence-threshold, else concede to a more confident peer, else "
                                      "refine"),
    "agreement-threshold": FixedRule(lambda _: AgreementThreshold(), 40, about="fixed rule: persist if a peer agrees, "
                                     "else concede to an answer two share, else refine"),
    "always-resample": FixedRule(lambda _: ConstantPolicy(Action.RESAMPLE), 35, actions="resample",
                                 about="fixed rule: every agent draws a fresh sample"),
    "agreement-resample": FixedRule(lambda _: AgreementThreshold(Action.RESAMPLE), 45, actions="resample",
                                    about="fixed rule: the agreement rule, a lone answer resampled instead of refined"),
    "agreement-then-confidence": FixedRule(AgreementThenConfidence, 60, confidence=True, about="fixed rule: the "
                                           "agreement rule, a confident lone agent kept from conceding"),
})
"""name -> rule, in the order ``methods.METHODS`` lists them (a tree store's manifest records that order)."""
