"""Held-out comparison of a trained policy with the fixed policies, on counterfactual rewards.

Every collected decision carries the reward each action of its set would have earned with the other
agents' moves fixed (``rl.rollouts``), so a policy is scored offline by the reward of the action it picks,
and the constant policies (always PERSIST / REFINE / CONCEDE), the fixed rules (agreement-threshold,
confidence-threshold, read off the features by ``rl/rule_actions.py``) and the oracle (best action, an
upper bound) by theirs. The gain is reported over the best constant and over the best rule: the rule that
collected the data is the bar a learned policy must clear. This compares single decisions, not whole
episodes: an agent's choice changes what its peers see next round, which only a rerun of the episodes
(``delib run``) captures.

Accuracy counts a decision right when the chosen action earns the best reward, ties included: on most
collected decisions every action earns the same (nothing the agent does changes the vote), and there
the tie-broken oracle label (the SFT target, ``label_accuracy``) would reward the cheapest action alone.
The constant policies get the same tie-aware accuracy, so always-PERSIST is the baseline to beat. The
gain interval is over questions (decisions of one question are not independent). The scores are written
as held_out.json (``rl/held_out_file.py``).
"""

from __future__ import annotations

import torch

from deliberation.engine.features import FEATURE_SETS
from deliberation.policy.network import MetaPolicyNet
from deliberation.rl.data import DecisionBatch
from deliberation.rl.held_out_file import HeldOut
from deliberation.rl.rule_actions import RULES
from deliberation.rl.sft import oracle_labels


def held_out(net: MetaPolicyNet, val: DecisionBatch) -> HeldOut | None:
    """Score ``net``'s greedy actions on ``val`` against the constant policies and the oracle."""
    if len(val) == 0:
        return None
    with torch.no_grad():
        greedy = net(val.own, val.peers, val.peer_mask).argmax(-1)  # (N,)
    oracle = oracle_labels(val.rewards)  # (N,)
    best = val.rewards == val.rewards.max(-1, keepdim=True).values  # (N, A) bool: reward-maximizing actions
    n_actions = val.rewards.shape[-1]
    fixed = tuple(float(val.rewards[:, a].mean()) for a in range(n_actions))
    rules = rule_actions(val)
    rule_rewards = {name: _reward_of(val, actions) for name, actions in rules.items()}
    best_rule = max(sorted(rule_rewards), key=rule_rewards.__getitem__) if rules else ""
    return HeldOut(
        questions=len(set(val.examples)),
        decisions=len(val),
        decision_points=int(val.groups.unique().numel()),
        policy_reward=_reward_of(val, greedy),
        decision_accuracy=float(best.gather(-1, greedy.unsqueeze(-1)).double().mean()),
        label_accuracy=float((greedy == oracle).double().mean()),
        tied_share=float(best.all(-1).double().mean()),
        policy_actions=_shares(greedy, n_actions),
        fixed_rewards=fixed,
        fixed_accuracies=tuple(float(best[:, a].double().mean()) for a in range(n_actions)),
        gain_ci95=_gain_ci95(val, greedy, _constant(val, max(range(n_actions), key=fixed.__getitem__))),
        oracle_reward=_reward_of(val, oracle),
        oracle_actions=_shares(oracle, n_actions),
        rule_rewards=rule_rewards,
        rule_accuracies={name: float(best.gather(-1, a.unsqueeze(-1)).double().mean()) for name, a in rules.items()},
        best_rule=best_rule,
        gain_over_rule_ci95=_gain_ci95(val, greedy, rules[best_rule]) if rules else None,
    )


def rule_actions(val: DecisionBatch) -> dict[str, torch.Tensor]:
    """Each fixed rule's actions (N,) on ``val``; none for features other than the engine's (synthetic data)."""
    if val.n_features not in {len(s.names) for s in FEATURE_SETS.values()}:
        return {}
    return {name: rule(val) for name, rule in RULES.items()}


def _constant(val: DecisionBatch, action: int) -> torch.Tensor:
    return torch.full((len(val),), action, dtype=torch.long)  # (N,)


def _gain_ci95(val: DecisionBatch, greedy: torch.Tensor, reference: torch.Tensor) -> tuple[float, float, float]:
    """Mean per-question reward gain of ``greedy`` (N,) over the ``reference`` actions (N,), with a normal 95%
    interval across questions (the interval is the mean when only one question is held out)."""
    taken = lambda actions: val.rewards.gather(-1, actions.unsqueeze(-1)).squeeze(-1)  # noqa: E731
    diff = taken(greedy) - taken(reference)  # (N,)
    index = {q: i for i, q in enumerate(sorted(set(val.examples)))}
    question = torch.tensor([index[e] for e in val.examples])  # (N,) question index
    counts = torch.bincount(question, minlength=len(index)).double()  # (Q,)
    per_question = torch.zeros(len(index), dtype=torch.float64).index_add_(0, question, diff.double()) / counts
    mean = float(per_question.mean())
    half = 1.96 * float(per_question.std()) / len(index) ** 0.5 if len(index) > 1 else 0.0
    return mean, mean - half, mean + half


def _reward_of(val: DecisionBatch, actions: torch.Tensor) -> float:
    """Mean reward (unscaled) of ``actions`` (N,) over the decisions of ``val``."""
    return float(val.rewards.gather(-1, actions.unsqueeze(-1)).mean())


def _shares(actions: torch.Tensor, n_actions: int) -> tuple[float, ...]:
    """(A,) share of each of the set's ``n_actions`` actions in ``actions`` (N,), ACTION_ORDER."""
    counts = torch.bincount(actions, minlength=n_actions).double() / len(actions)
    return tuple(float(c) for c in counts)
