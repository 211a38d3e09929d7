"""The rules read off decision features agree with the rules themselves (policy/rules.py)."""

from __future__ import annotations

import math

import numpy as np
import torch

from deliberation.engine.state import AgentView, observe
from deliberation.policy.rules import AgreementThreshold, ConfidenceThreshold
from deliberation.rl.data import tensorize
from deliberation.rl.rule_actions import agreement_threshold, confidence_threshold
from deliberation.types import ACTIONS, Action, Decision

TEAMS = [  # (key, confidence) per agent: agreement splits, unparseable answers, confidence orders
    [("1", 0.9), ("1", 0.2), ("2", 0.5)], [("1", 0.6), ("2", 0.8), ("3", 0.75)], [(None, 0.5), ("2", 0.6), ("2", 0.4)],
    [("1", 0.3), ("2", 0.3), ("2", 0.9)], [(None, 0.9), (None, 0.5), ("4", 0.1)], [("5", 0.7), ("5", 0.7), ("5", 0.1)],
    [("1", 0.1), ("2", 0.2), ("3", 0.3), ("3", 0.9), ("1", 0.5)],
]


def decisions_and_rule_actions():
    decisions, agreement, confidence = [], [], []
    for t, team in enumerate(TEAMS):
        obs = observe([AgentView(k, f"answer {k}", c, 20, False, False) for k, c in team], 1, 2)
        rng = np.random.default_rng(0)
        agreement += AgreementThreshold().decide(obs, rng)[0]
        confidence += ConfidenceThreshold(0.7).decide(obs, rng)[0]
        decisions += [Decision(f"q{t}", 0, 1, i, tuple(map(float, obs.own[i])),
                               tuple(tuple(map(float, p)) for p in obs.peers[i]), Action.PERSIST, math.log(1 / 3),
                               (0.0, 0.0, 0.0), 0.0, 0.0) for i in range(len(team))]
    return decisions, agreement, confidence


def test_feature_rules_take_the_rules_actions_on_hand_built_teams():
    decisions, agreement, confidence = decisions_and_rule_actions()
    by_team = {}
    for d in decisions:  # teams of different sizes are tensorized separately (peer padding differs)
        by_team.setdefault(len(d.peers), []).append(d)
    got_agreement, got_confidence = {}, {}
    for group in by_team.values():
        batch = tensorize(group)
        for d, a, c in zip(group, agreement_threshold(batch).tolist(), confidence_threshold(batch).tolist()):
            got_agreement[(d.example_id, d.agent)], got_confidence[(d.example_id, d.agent)] = ACTIONS[a], ACTIONS[c]
    keys = [(d.example_id, d.agent) for d in decisions]
    assert [got_agreement[k] for k in keys] == list(agreement)
    assert [got_confidence[k] for k in keys] == list(confidence)
    assert {Action.PERSIST, Action.REFINE, Action.CONCEDE} <= set(agreement) | set(confidence)


def test_the_agreement_rule_reproduces_the_collectors_unexplored_actions(tmp_path):
    """delib collect's behaviour is the agreement rule, epsilon-mixed: wherever the log-prob says the rule's
    action was taken (1 - eps + eps/3), the feature rule names that action; elsewhere another one."""
    from deliberation.cli.main import main
    from deliberation.rl.rollout_files import load_decisions

    assert main(["collect", "--backend", "scripted", "--limit", "12", "--quiet", "--out", str(tmp_path)]) == 0
    batch = tensorize(load_decisions([tmp_path]))
    rule = agreement_threshold(batch)
    kept = torch.isclose(batch.logprobs, torch.tensor(math.log(0.8 + 0.2 / 3)))
    assert bool((rule[kept] == batch.actions[kept]).all()) and bool((rule[~kept] != batch.actions[~kept]).all())
    assert int(kept.sum()) > 20 and int((~kept).sum()) > 0
