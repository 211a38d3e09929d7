"""Full-information objectives: every decision's three counterfactual rewards trained on.

The must-show case: a near-deterministic behaviour rule (mu = 0.867 on its action, 0.067 on each other, the
epsilon-mixed agreement rule of `delib collect`) whose own action is not the best one. The sampled,
PPO-clipped objective (the default) stays on the rule's action; the full-information ones learn the better one.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from deliberation.errors import DelibError
from deliberation.rl.advantages import softrankpo
from deliberation.rl.algorithms import ALGORITHMS
from deliberation.rl.config import TrainConfig
from deliberation.rl.data import tensorize
from deliberation.rl.losses import expected_advantage
from deliberation.rl.trainer import train_pg, train_sft
from deliberation.actions import ACTIONS, Action
from deliberation.types import Decision

RULE, BETTER = ACTIONS.index(Action.PERSIST), ACTIONS.index(Action.CONCEDE)
REFINE = ACTIONS.index(Action.REFINE)
EPSILON = 0.2
MU = np.full(3, EPSILON / 3)
MU[RULE] += 1 - EPSILON  # 0.867 on the rule's action, 0.067 on each other
SMALL = TrainConfig(lr=1e-2, batch_size=128, val_fraction=0.0, hidden=16, heads=2, seed=0)


def rule_data(n_examples: int = 40, samples: int = 8, seed: int = 0) -> list[Decision]:
    """K behaviour samples per (question, agent) drawn from MU. On odd questions CONCEDE earns 1 and the
    others 0; on even ones all three tie at 0 (most real decisions: nothing the agent does changes the vote)."""
    rng = np.random.default_rng(seed)
    out = []
    for ex in range(n_examples):
        rewards = (0.0, 0.0, 1.0) if ex % 2 else (0.0, 0.0, 0.0)
        for agent in range(3):
            own, peers = rng.random(4), rng.random((2, 4))
            for sample in range(samples):
                a = int(rng.choice(3, p=MU))
                out.append(Decision(f"q{ex}", sample, 1, agent, tuple(own.tolist()),
                                    tuple(tuple(p.tolist()) for p in peers), ACTIONS[a], math.log(MU[a]),
                                    rewards, 0.0, 0.0, refine_tokens=100.0))
    return out


def behaviour_clone(decisions: list[Decision]):
    """A start policy imitating the behaviour (labels = the sampled actions), like an SFT policy that copies
    the rule: P(rule action) about 0.85."""
    taken = [dataclasses.replace(d, rewards=tuple(float(a is d.action) for a in ACTIONS)) for d in decisions]
    net, _ = train_sft(taken, dataclasses.replace(SMALL, epochs=5))
    return net


def mean_probs(net, decisions: list[Decision]) -> torch.Tensor:
    """(3,) the policy's action probabilities averaged over the decisions."""
    batch = tensorize(decisions)
    with torch.no_grad():
        return torch.softmax(net(batch.own, batch.peers, batch.peer_mask), -1).mean(0)


@pytest.fixture(scope="module")
def start():
    """The data, the rule-imitating start policy, and what today's default (softrankpo: sampled action,
    PPO-clipped at 0.2) makes of it on the questions where CONCEDE is better."""
    data = rule_data()
    init = behaviour_clone(data)
    assert mean_probs(init, data)[RULE] > 0.8
    sampled, _ = train_pg(data, dataclasses.replace(SMALL, algo="softrankpo", epochs=20), init=init)
    return data, init, mean_probs(sampled, better_questions(data))


def better_questions(data: list[Decision]) -> list[Decision]:
    return [d for d in data if d.rewards[BETTER] > d.rewards[RULE]]


@pytest.mark.parametrize("algo", ["softrankpo-full", "reinforce_baseline-full", "softrankpo-pooled"])
def test_full_information_learns_the_better_action_where_the_sampled_clipped_objective_cannot(start, algo):
    data, init, sampled = start
    assert sampled[RULE] > 0.6 and sampled[BETTER] < 0.5  # the clip holds pi(rule) above 0.8 * 0.867
    net, _ = train_pg(data, dataclasses.replace(SMALL, algo=algo, epochs=20), init=init)
    assert mean_probs(net, better_questions(data))[BETTER] > 0.5


def one_decision(rewards, action=Action.PERSIST, sample=0, refine_tokens=None, token_cost=0.0) -> Decision:
    return Decision("q", sample, 1, 0, (0.0,), (), action, math.log(1 / 3), rewards, 0.0, 0.0, token_cost,
                    refine_tokens)


def test_full_softrankpo_ranks_the_three_actions_of_a_decision_ties_sharing_their_score():
    batch = tensorize([one_decision((0.0, 0.0, 1.0)), one_decision((5.0, 5.0, 5.0))])
    adv = ALGORITHMS["softrankpo-full"].decision_advantages(batch, TrainConfig(algo="softrankpo-full"))
    low, top = float(torch.special.ndtri(torch.tensor(1 / 6))), float(torch.special.ndtri(torch.tensor(5 / 6)))
    expected = torch.tensor([[low / 2, low / 2, top], [0.0, 0.0, 0.0]], dtype=torch.float64)
    assert adv.shape == (2, 3) and torch.allclose(adv.double(), expected, atol=1e-6)


def test_pooled_softrankpo_ranks_all_actions_of_all_samples_of_a_group():
    decisions = [one_decision((0.0, 0.0, 1.0)), one_decision((0.0, 2.0, 1.0), sample=1)]
    batch = tensorize(decisions)
    adv = ALGORITHMS["softrankpo-pooled"].decision_advantages(batch, TrainConfig(algo="softrankpo-pooled"))
    flat = torch.tensor([0.0, 0.0, 1.0, 0.0, 2.0, 1.0], dtype=torch.float64)
    assert torch.allclose(adv.double(), softrankpo(flat, torch.zeros(6, dtype=torch.long)).reshape(2, 3))


def test_expected_advantage_loss_is_minus_the_policy_weighted_advantage():
    logits = torch.tensor([[2.0, 0.0, -1.0], [0.5, 0.5, 0.5]], requires_grad=True)
    adv = torch.tensor([[1.0, -0.5, 0.0], [0.0, 0.0, 0.0]])
    logp = torch.log_softmax(logits, -1)
    loss = expected_advantage(logp, torch.zeros(2, dtype=torch.long), adv, torch.zeros(2), None)
    assert torch.allclose(loss, -(logp.exp() * adv).sum(-1).mean())
    loss.backward()
    assert torch.equal(logits.grad[1], torch.zeros(3))  # a decision whose actions tie teaches nothing
    with pytest.raises(ValueError, match="one advantage per action"):
        expected_advantage(logp, torch.zeros(2, dtype=torch.long), adv[:, 0], torch.zeros(2), None)


def test_full_information_trains_on_single_samples_where_ranking_samples_cannot():
    data = [d for d in rule_data(n_examples=6) if d.sample == 0]  # one sample per (question, agent)
    with pytest.raises(DelibError, match="nothing to rank"):
        train_pg(data, dataclasses.replace(SMALL, epochs=1))
    _, metrics = train_pg(data, dataclasses.replace(SMALL, algo="softrankpo-full", epochs=1))
    assert metrics and math.isfinite(metrics[-1].loss)


def test_the_token_cost_charges_every_refine_including_counterfactual_ones():
    """REFINE (100 tokens) would win by 1 at coefficient 0, loses at 0.02: a cost-aware policy persists."""
    batch = tensorize([one_decision((0.0, 1.0, 0.0), refine_tokens=100.0)])
    adv = lambda coef: ALGORITHMS["reinforce_baseline-full"].decision_advantages(  # noqa: E731
        batch, TrainConfig(algo="reinforce_baseline-full", token_cost_coef=coef))[0]
    assert int(adv(0.0).argmax()) == REFINE and int(adv(0.02).argmax()) != REFINE


def test_older_rollouts_take_the_refine_cost_from_a_sample_that_refined_or_are_refused():
    """Before Decision.refine_tokens, only the taken action's cost was recorded; the K samples of a group share
    one REFINE outcome, so one sample that refined tells the others. A group where none did has no cost."""
    known = [one_decision((0.0, 1.0, 0.0)), one_decision((0.0, 1.0, 0.0), Action.REFINE, 1, token_cost=70.0)]
    assert tensorize(known).action_costs[:, REFINE].tolist() == [70.0, 70.0]
    unknown = tensorize([one_decision((0.0, 1.0, 0.0))])
    with pytest.raises(DelibError, match="--token-cost-coef"):
        ALGORITHMS["softrankpo-full"].decision_advantages(
            unknown, TrainConfig(algo="softrankpo-full", token_cost_coef=0.01))
    no_cost = TrainConfig(algo="softrankpo-full")
    assert torch.isfinite(ALGORITHMS["softrankpo-full"].decision_advantages(unknown, no_cost)).all()
    later = [dataclasses.replace(d, round=2) for d in known]  # round 2: the samples' histories differ
    assert math.isnan(tensorize(later).action_costs[0, REFINE]) and tensorize(later).action_costs[1, REFINE] == 70.0
