"""Loss terms against hand computations, and the algorithm registry (docs/design.md, section Training)."""

from __future__ import annotations

import math

import pytest
import torch

from deliberation.rl.advantages import ADVANTAGES, grpo, softrankpo
from deliberation.rl.config import TrainConfig
from deliberation.rl.data import tensorize
from deliberation.rl.algorithms import ALGORITHMS, PPO_CLIP_EPS, is_supervised
from deliberation.rl.losses import (entropy, kl_divergence, policy_gradient,
                                    policy_loss)
from deliberation.actions import ACTIONS
from deliberation.types import Decision

LOGITS = torch.tensor([[2.0, 0.0, -1.0], [0.5, 0.5, 0.5], [-1.0, 3.0, 0.0]])
ACTIONS_TAKEN = torch.tensor([0, 2, 1])
ADV = torch.tensor([1.0, -0.5, 2.0])


def test_plain_policy_gradient_is_minus_mean_advantage_times_logprob():
    logp = torch.log_softmax(LOGITS, -1)
    expected = -(ADV * logp[torch.arange(3), ACTIONS_TAKEN]).mean()
    got = policy_gradient(logp, ACTIONS_TAKEN, ADV, torch.zeros(3), clip_eps=None)
    assert torch.allclose(got, expected)


def test_clipped_form_equals_ratio_times_advantage_inside_the_trust_region():
    logp = torch.log_softmax(LOGITS, -1)
    behaviour = logp[torch.arange(3), ACTIONS_TAKEN] - 0.05  # ratios e^0.05, inside 1 +- 0.2
    got = policy_gradient(logp, ACTIONS_TAKEN, ADV, behaviour, clip_eps=0.2)
    assert torch.allclose(got, -(math.exp(0.05) * ADV).mean())


def test_clipped_form_stops_the_gradient_outside_the_trust_region():
    logits = LOGITS.clone().requires_grad_(True)
    logp = torch.log_softmax(logits, -1)
    behaviour = logp.detach()[torch.arange(3), ACTIONS_TAKEN] - 1.0  # ratio e > 1.2 with positive A
    policy_gradient(logp, ACTIONS_TAKEN, ADV.abs(), behaviour, clip_eps=0.2).backward()
    assert torch.equal(logits.grad, torch.zeros_like(logits))


def test_kl_and_entropy_are_exact_sums_over_the_three_actions():
    logp, ref = torch.log_softmax(LOGITS, -1), torch.log_softmax(LOGITS.flip(-1), -1)
    p = logp.exp()
    assert torch.allclose(kl_divergence(logp, ref), (p * (logp - ref)).sum(-1).mean())
    assert kl_divergence(logp, logp) == 0
    assert torch.allclose(entropy(torch.log_softmax(torch.zeros(2, 3), -1)), torch.tensor(math.log(3)))


def test_policy_loss_combines_the_terms_with_the_configured_weights():
    cfg = TrainConfig(kl_coef=0.3, entropy_coef=0.1, clip_eps=None)
    ref = LOGITS.flip(-1)
    terms = policy_loss(LOGITS, ref, ACTIONS_TAKEN, ADV, torch.zeros(3), cfg)
    assert torch.allclose(terms.total, terms.policy_gradient + 0.3 * terms.kl - 0.1 * terms.entropy)
    assert terms.kl > 0
    assert policy_loss(LOGITS, None, ACTIONS_TAKEN, ADV, torch.zeros(3), cfg).kl == 0


def test_registry_holds_every_algorithm_and_ppo_always_clips():
    """Each registered advantage is an algorithm under each objective it declares (so a new advantage is an
    algorithm with no other edit), beside sft and ppo; today's five are all there."""
    derived = {n if o == "sampled" else f"{n}-{o}" for n, adv in ADVANTAGES.items() for o in adv.objectives}
    assert set(ALGORITHMS) == {"sft", "ppo", *derived}
    sampled = {"softrankpo", "grpo", "reinforce", "reinforce_baseline", "rloo"}
    assert {"softrankpo-pooled", *sampled, *(f"{n}-full" for n in sampled)} <= set(ALGORITHMS)
    assert [name for name in ALGORITHMS if is_supervised(name)] == ["sft"]
    plain = TrainConfig(clip_eps=None)
    assert ALGORITHMS["ppo"].clip_eps(plain) == PPO_CLIP_EPS
    assert ALGORITHMS["softrankpo"].clip_eps(plain) is None
    assert ALGORITHMS["grpo"].clip_eps(TrainConfig(clip_eps=0.1)) == 0.1


def test_algorithm_passes_its_config_fields_to_the_advantage():
    rewards, groups = torch.tensor([0.0, 1.0, 5.0, 2.0]), torch.tensor([0, 0, 0, 0])
    cfg = TrainConfig(tau=0.5)
    assert torch.equal(ALGORITHMS["softrankpo"].advantages(rewards, groups, cfg),
                       softrankpo(rewards, groups, tau=0.5))
    assert torch.equal(ALGORITHMS["ppo"].advantages(rewards, groups, cfg), grpo(rewards, groups))


def three_samples():
    """One group: three samples of one (question, round, agent), taking ACTIONS_TAKEN, rewards differing."""
    rewards = [(1.0, 0.0, 2.0), (0.0, 0.0, 1.0), (2.0, -1.0, 0.0)]
    return tensorize([Decision("q", k, 1, 0, (0.0,), (), ACTIONS[int(a)], math.log(1 / 3), r, 0.0, 0.0)
                      for k, (a, r) in enumerate(zip(ACTIONS_TAKEN, rewards))])


@pytest.mark.parametrize("algo", sorted(n for n in ALGORITHMS if not is_supervised(n)))
def test_every_algorithm_gives_a_finite_differentiable_loss(algo):
    logits = LOGITS.clone().requires_grad_(True)
    cfg = TrainConfig(algo=algo)
    batch = three_samples()
    adv = ALGORITHMS[algo].decision_advantages(batch, cfg)  # (3,) or (3, 3)
    terms = policy_loss(logits, LOGITS.flip(-1), batch.actions, adv, batch.logprobs, cfg)
    terms.total.backward()
    assert torch.isfinite(terms.total) and bool(logits.grad.abs().sum() > 0)
