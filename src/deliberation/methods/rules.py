"""The fixed meta-policies as methods of their own: one per rule of ``deliberation.policy.rules.FIXED_RULES``,
under the rule's name; a rule that reads the critic calls it and takes ``--confidence-threshold`` and
``--lazy-critic``.
``methods.METHODS`` names each as ``deliberation.methods.rules:RULE_METHODS[name]``."""

from __future__ import annotations

from deliberation.engine.spec import MethodSpec
from deliberation.methods.base import Method
from deliberation.policy.rules import FIXED_RULES, FixedRule
from deliberation.registry import Registry


def rule_method(name: str, rule: FixedRule) -> Method:
    """The method that runs ``rule`` under ``name``: its policy at the config's threshold, the critic when the
    rule reads it."""
    options = frozenset({"confidence_threshold", "lazy_critic"}) if rule.confidence else frozenset()
    return Method(spec=lambda cfg: MethodSpec(name=name, policy=rule.policy(cfg.confidence_threshold),
                                              confidence=rule.confidence, lazy_critic=cfg.lazy_critic),
                  options=options, fixed_rule=True, about=rule.about)


RULE_METHODS: Registry[Method] = Registry("method", {name: rule_method(name, rule)
                                                    for name, rule in FIXED_RULES.items()})
