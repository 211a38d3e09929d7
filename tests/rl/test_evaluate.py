"""Held-out comparison of a policy with the constant policies and the oracle, on counterfactual rewards."""

from __future__ import annotations

import math

import pytest
import torch

from deliberation.policy.network import MetaPolicyNet
from deliberation.rl.data import tensorize
from deliberation.rl.held_out import held_out
from deliberation.actions import ACTIONS
from deliberation.types import Decision

REWARDS = ((1.0, 0.0, -1.0), (0.0, 1.0, 0.0), (-1.0, -1.0, 1.0), (1.0, 1.0, 1.0))


def decision(i: int, rewards: tuple[float, float, float]) -> Decision:
    own = (float(i), 0.0, 1.0, 0.5)
    return Decision(example_id=f"q{i % 2}", sample=0, round=1, agent=0, own=own, peers=((0.0,) * 4,) * 2,
                    action=ACTIONS[0], logprob=math.log(1 / 3), rewards=rewards, r_local=0.0, r_global=0.0)


class Constant(MetaPolicyNet):
    """Always the same action, whatever the features."""

    def __init__(self, action: int) -> None:
        super().__init__(4)
        self.action = action

    def forward(self, own, peers, mask):  # (N, 4), (N, P, 4), (N, P) -> (N, 3)
        return torch.nn.functional.one_hot(torch.full((own.shape[0],), self.action), 3).float()


@pytest.mark.parametrize("action", range(3))
def test_a_constant_policy_scores_its_fixed_column(action):
    val = tensorize([decision(i, r) for i, r in enumerate(REWARDS)])
    scores = held_out(Constant(action), val)
    assert scores.policy_reward == pytest.approx(scores.fixed_rewards[action])
    assert scores.policy_actions[action] == 1.0
    assert (scores.questions, scores.decisions) == (2, 4)


def test_fixed_and_oracle_rewards_and_oracle_ties_go_to_the_cheaper_action():
    scores = held_out(Constant(0), tensorize([decision(i, r) for i, r in enumerate(REWARDS)]))
    assert scores.fixed_rewards == pytest.approx((0.25, 0.25, 0.25))
    assert scores.oracle_reward == 1.0
    # oracle labels: persist, refine, concede, and the all-equal row goes to persist (cheapest)
    assert scores.oracle_actions == pytest.approx((0.5, 0.25, 0.25))
    # always-persist is right on the first row and on the all-tied last row; the label agrees only there too
    assert (scores.decision_accuracy, scores.label_accuracy, scores.tied_share) == (0.5, 0.5, 0.25)
    assert scores.fixed_accuracies == pytest.approx((0.5, 0.5, 0.5)) and scores.decision_points == 2


def test_ties_count_as_right_but_not_for_the_label():
    """Refine on an all-tied decision earns the best reward though the label (cheapest) is persist."""
    val = tensorize([decision(i, (1.0, 1.0, 1.0)) for i in range(4)])
    scores = held_out(Constant(1), val)
    assert (scores.decision_accuracy, scores.label_accuracy, scores.tied_share) == (1.0, 0.0, 1.0)


def test_gain_interval_is_over_questions():
    """Always-refine against the best constant (persist): q0 (rows 0, 2) gains 0.5, q1 (rows 1, 3) -1."""
    rows = [decision(0, (0.0, 1.0, 0.0)), decision(1, (1.0, 0.0, 0.0)), decision(2, (0.0, 0.0, 0.0)),
            decision(3, (1.0, 0.0, 0.0))]
    mean, lo, hi = held_out(Constant(1), tensorize(rows)).gain_ci95
    half = 1.96 * torch.tensor([0.5, -1.0]).std().item() / 2**0.5
    assert (mean, lo, hi) == pytest.approx((-0.25, -0.25 - half, -0.25 + half))
    assert held_out(Constant(0), tensorize(rows)).gain_ci95 == (0.0, 0.0, 0.0)  # persist is the best constant


def test_nothing_held_out_gives_none():
    batch = tensorize([decision(0, REWARDS[0])])
    assert held_out(Constant(0), batch.subset(torch.zeros(0, dtype=torch.long))) is None


def test_held_out_scores_the_fixed_rules_on_engine_features():
    """Agent 0 holds an answer one peer shares (agreement rule: PERSIST) with P(Yes) 0.4 < 0.7 and a more
    confident peer holding another answer (confidence rule: CONCEDE). PERSIST earns 1, CONCEDE 0: the best
    rule is agreement-threshold (reward 1); always-REFINE's -1 gives the policy (REFINE) a gain of -2 over it."""
    from deliberation.engine.state import AgentView, observe
    from deliberation.rl.held_out import held_out

    obs = observe([AgentView("1", "a", 0.4, 10, False, False), AgentView("1", "b", 0.3, 10, False, False),
                   AgentView("2", "c", 0.9, 10, False, False)], 1, 2)
    d = Decision("q", 0, 1, 0, tuple(map(float, obs.own[0])), tuple(tuple(map(float, p)) for p in obs.peers[0]),
                 ACTIONS[0], 0.0, (1.0, -1.0, 0.0), 0.0, 0.0)
    net = Constant(1)
    net.n_features = len(obs.own[0])
    scores = held_out(net, tensorize([d]))
    assert scores.rule_rewards == {"agreement-threshold": 1.0, "confidence-threshold": 0.0}
    assert scores.best_rule == "agreement-threshold" and scores.gain_over_rule_ci95 == (-2.0, -2.0, -2.0)
