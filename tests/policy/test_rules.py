"""agreement-then-confidence (policy/rules.py) on hand-built teams, one per branch, and as a method reading
--confidence-threshold; the registry of fixed rules (``FIXED_RULES``) and the methods made from it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from deliberation import methods
from deliberation.cli.main import main
from deliberation.engine.state import AgentView, observe
from deliberation.methods.base import MethodConfig
from deliberation.policy.rules import FIXED_RULES, AgreementThenConfidence, AgreementThreshold
from deliberation.actions import ACTION_SETS, Action

P, C, R = Action.PERSIST, Action.CONCEDE, Action.REFINE


def decide(team: list[tuple[str | None, float | None]], threshold: float = 0.7) -> tuple[Action, ...]:
    obs = observe([AgentView(k, f"answer {k}", c, 20, False, False) for k, c in team], 1, 2)
    return AgreementThenConfidence(threshold).decide(obs, np.random.default_rng(0))[0]


@pytest.mark.parametrize("team, expected", [
    # agents 0 and 1 agree: both persist whatever their confidence; agent 2, alone and unsure, concedes to them
    ([("1", 0.1), ("1", 0.2), ("2", 0.3)], (P, P, C)),
    # agent 2 is alone but confident (0.8 >= 0.7): it persists instead of conceding
    ([("1", 0.1), ("1", 0.2), ("2", 0.8)], (P, P, P)),
    # confidence exactly at the threshold persists
    ([("1", 0.7), ("2", 0.1), ("3", 0.69)], (P, R, R)),
    # nobody agrees, nobody is confident, no pair to concede to: refine
    ([("1", 0.1), ("2", 0.2), ("3", 0.3)], (R, R, R)),
    # an unparseable answer never persists on confidence; it concedes to the agreeing pair
    ([(None, 0.99), ("4", 0.1), ("4", 0.1)], (C, P, P)),
    # no critic (confidence None) reads as 0.5
    ([("1", None), ("2", None), ("3", None)], (R, R, R)),
])
def test_each_branch_on_a_hand_built_team(team, expected):
    assert decide(team) == expected


def test_the_threshold_moves_the_confidence_branch_only():
    team = [("1", 0.5), ("2", 0.5), ("2", 0.1)]
    assert decide(team, 0.5) == (P, P, P) and decide(team, 0.6) == (C, P, P)
    obs = observe([AgentView(k, "t", c, 20, False, False) for k, c in team], 1, 2)
    assert decide(team, 1.01) == AgreementThreshold().decide(obs, np.random.default_rng(0))[0]


def test_the_method_reads_confidence_threshold_and_uses_the_critic(tmp_path):
    method = methods.get("agreement-then-confidence")
    spec = method.spec(MethodConfig(confidence_threshold=0.9))
    assert spec.policy == AgreementThenConfidence(0.9) and spec.confidence and method.fixed_rule
    out = tmp_path / "run"
    assert main(["run", "--method", "agreement-then-confidence", "--confidence-threshold", "0.9", "--backend",
                 "scripted", "--limit", "4", "--quiet", "--out", str(out)]) == 0
    assert json.loads((out / "config.json").read_text())["confidence_threshold"] == 0.9


TEAMS = [  # agreeing pairs, a lone answer, nobody agreeing, an unparseable answer, no critic
    [("1", 0.9), ("1", 0.2), ("2", 0.5)], [("1", 0.6), ("2", 0.8), ("3", 0.75)],
    [(None, 0.5), ("2", 0.6), ("2", 0.4)], [("1", 0.3), ("2", 0.9), ("3", None)],
]


@pytest.mark.parametrize("name", list(FIXED_RULES))
def test_each_rule_takes_only_actions_of_its_declared_set_and_needs_it(name):
    rule = FIXED_RULES[name]
    taken = set()
    for team in TEAMS:
        obs = observe([AgentView(k, f"answer {k}", c, 20, False, False) for k, c in team], 1, 2)
        taken |= set(rule.policy(0.7).decide(obs, np.random.default_rng(0))[0])
    smaller = [s for s in ACTION_SETS if len(ACTION_SETS[s]) < len(ACTION_SETS[rule.actions])]
    assert taken <= set(ACTION_SETS[rule.actions]) and all(not taken <= set(ACTION_SETS[s]) for s in smaller)


def test_every_registered_rule_is_a_fixed_rule_method_in_registry_order():
    assert [m for m in methods.METHODS if methods.get(m).fixed_rule] == list(FIXED_RULES)
    for name, rule in FIXED_RULES.items():
        method = methods.get(name)
        spec = method.spec(MethodConfig(confidence_threshold=0.9))
        assert spec.name == name and spec.policy == rule.policy(0.9) and spec.confidence == rule.confidence
        assert method.options == ({"confidence_threshold", "lazy_critic"} if rule.confidence else set())
    assert len({rule.simplicity for rule in FIXED_RULES.values()}) == len(FIXED_RULES)  # the tie-break decides
