"""The tensor twins of the fixed rules (rl/rule_actions.py) agree with the rules' policies (policy/rules.py),
and a new rule is one entry of ``FIXED_RULES`` (and, for the held-out comparison, one entry of ``RULES``)."""

from __future__ import annotations

import inspect
import json
import math
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from deliberation.engine.state import AgentView, Observation, observe
from deliberation.policy.rules import FIXED_RULES, FixedRule
from deliberation.rl.data import tensorize
from deliberation.rl.held_out import rule_actions
from deliberation.rl.rule_actions import CONFIDENCE, PARSEABLE, RULES, agreement_threshold
from deliberation.actions import ACTION_ORDER, ACTIONS, Action
from deliberation.types import Decision

THRESHOLD = 0.7  # the twins' default threshold, as MethodConfig's
TEAMS = [  # (key, confidence) per agent: agreement splits, unparseable answers, confidence orders
    [("1", 0.9), ("1", 0.2), ("2", 0.5)], [("1", 0.6), ("2", 0.8), ("3", 0.75)], [(None, 0.5), ("2", 0.6), ("2", 0.4)],
    [("1", 0.3), ("2", 0.3), ("2", 0.9)], [(None, 0.9), (None, 0.5), ("4", 0.1)], [("5", 0.7), ("5", 0.7), ("5", 0.1)],
    [("1", 0.1), ("2", 0.2), ("3", 0.3), ("3", 0.9), ("1", 0.5)],
]


def team(t: int) -> tuple[Observation, list[Decision]]:
    """Team ``t`` of TEAMS: its observation and its agents' decisions as a rollout records them."""
    obs = observe([AgentView(k, f"answer {k}", c, 20, False, False) for k, c in TEAMS[t]], 1, 2)
    peers = [tuple(tuple(map(float, p)) for p in obs.peers[i]) for i in range(len(TEAMS[t]))]
    return obs, [Decision(f"q{t}", 0, 1, i, tuple(map(float, obs.own[i])), peers[i], Action.PERSIST,
                          math.log(1 / 3), (0.0, 0.0, 0.0), 0.0, 0.0) for i in range(len(TEAMS[t]))]


def policy_and_twin_actions(name: str) -> tuple[list[Action], list[Action]]:
    """Every agent of every team: (the action of rule ``name``'s policy, that of its twin on the decisions)."""
    policy, twin = FIXED_RULES[name].policy(THRESHOLD), RULES[name]
    expected, got = [], []
    for t in range(len(TEAMS)):  # one team per batch: teams differ in size, so in peer padding
        obs, decisions = team(t)
        expected += policy.decide(obs, np.random.default_rng(0))[0]
        got += [ACTION_ORDER[a] for a in twin(tensorize(decisions)).tolist()]
    return expected, got


@pytest.mark.parametrize("name", list(RULES))
def test_every_twin_takes_its_rules_actions_on_hand_built_teams(name):
    expected, got = policy_and_twin_actions(name)
    assert got == expected


def test_every_twin_is_of_a_fixed_rule():
    assert set(RULES) <= set(FIXED_RULES)


def test_the_teams_reach_every_branch_of_the_twinned_rules():
    taken = {a for name in RULES for a in policy_and_twin_actions(name)[0]}
    assert taken == set(ACTIONS)


@pytest.mark.needs_split("gsm8k/train")
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


@dataclass(frozen=True)
class ConfidentPersist:
    """Persist at the critic's P(Yes) >= threshold, else refine: a confidence rule that never concedes."""

    threshold: float = 0.7

    def decide(self, obs, rng):
        sure = [v.key is not None and (0.5 if v.confidence is None else v.confidence) >= self.threshold
                for v in obs.views]
        return tuple(Action.PERSIST if s else Action.REFINE for s in sure), (0.0,) * len(sure)


NEW = "confident-persist"
ONE_EDIT = f"""
from dataclasses import dataclass
import json, sys
from deliberation.policy.rules import FIXED_RULES, FixedRule
from deliberation.actions import Action
{inspect.getsource(ConfidentPersist)}
FIXED_RULES.table[{NEW!r}] = FixedRule(ConfidentPersist, simplicity=55, confidence=True)  # the one edit

from deliberation import methods
from deliberation.cli.main import main
from deliberation.runs.tune_rules import Rule, grid, read_grid, write_grid
write_grid(sys.argv[1] + ".grid.json", [Rule({NEW!r}, 0.9)])
print(json.dumps({{"methods": [m for m in methods.METHODS if methods.get(m).fixed_rule],
                  "options": sorted(methods.get({NEW!r}).options),
                  "default grids": [r.label for a in ("paper", "resample") for r in grid(a) if r.method == {NEW!r}],
                  "named": [r.label for r in read_grid(sys.argv[1] + ".grid.json")],
                  "run": main(["run", "--method", {NEW!r}, "--confidence-threshold", "0.9", "--backend", "scripted",
                               "--limit", "2", "--quiet", "--out", sys.argv[1]])}}))
"""


def test_a_new_rule_is_one_entry_then_a_method_and_tuned_where_a_grid_names_it(tmp_path):
    """A fresh interpreter registers the rule before anything reads the registry, as an edit of the source
    would: it is then a method (with the critic, its threshold and lazy-critic options), tuned by a grid file
    that names it, and on no default grid (those are data: a registration's grid never changes behind it)."""
    done = subprocess.run([sys.executable, "-c", ONE_EDIT, str(tmp_path / "run")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["methods"][-1] == NEW and found["methods"][:-1] == list(FIXED_RULES)
    assert found["options"] == ["confidence_threshold", "lazy_critic"]
    assert found["default grids"] == [] and found["named"] == [f"{NEW} t=0.9"] and found["run"] == 0
    assert json.loads((tmp_path / "run" / "config.json").read_text())["confidence_threshold"] == 0.9


def test_a_new_rules_twin_is_one_entry_checked_against_its_policy(monkeypatch):
    monkeypatch.setitem(FIXED_RULES.table, NEW, FixedRule(ConfidentPersist, simplicity=55, confidence=True))

    def confident_persist(batch):
        sure = (batch.own[:, PARSEABLE] > 0.5) & (batch.own[:, CONFIDENCE] >= THRESHOLD)  # (N,)
        return torch.where(sure, ACTIONS.index(Action.PERSIST), ACTIONS.index(Action.REFINE))

    monkeypatch.setitem(RULES.table, NEW, confident_persist)  # the one edit
    expected, got = policy_and_twin_actions(NEW)
    assert got == expected and {Action.PERSIST, Action.REFINE} <= set(expected)
    assert NEW in rule_actions(tensorize(team(0)[1]))  # the held-out comparison scores it

