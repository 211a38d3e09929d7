"""Decision records -> tensors, oracle labels and the split by question."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from deliberation.errors import DelibError
from deliberation.rl.data import first_samples, split_by_example, tensorize
from deliberation.rl.sft import oracle_labels
from deliberation.actions import ACTIONS, Action
from deliberation.types import Decision


def decision(example="q", sample=0, round_=1, agent=0, n_peers=2, action=Action.REFINE, rewards=(0.0, 1.0, 0.0)):
    return Decision(example_id=example, sample=sample, round=round_, agent=agent, own=(1.0, 2.0),
                    peers=tuple((float(j), -1.0) for j in range(n_peers)), action=action, logprob=-0.5,
                    rewards=rewards, r_local=0.0, r_global=0.0, token_cost=7.0)


def test_tensorize_pads_peers_and_keeps_every_field():
    batch = tensorize([decision(n_peers=2), decision(sample=1, n_peers=0, action=Action.CONCEDE)])
    assert batch.own.shape == (2, 2) and batch.peers.shape == (2, 2, 2)
    assert batch.peer_mask.tolist() == [[True, True], [False, False]]
    assert torch.equal(batch.peers[1], torch.zeros(2, 2))
    assert batch.actions.tolist() == [ACTIONS.index(Action.REFINE), ACTIONS.index(Action.CONCEDE)]
    assert batch.logprobs.tolist() == [-0.5, -0.5] and batch.token_costs.tolist() == [7.0, 7.0]
    assert batch.rewards.tolist() == [[0.0, 1.0, 0.0]] * 2 and batch.examples == ("q", "q")


def test_groups_are_question_round_agent_across_samples():
    rows = [decision(sample=s, agent=a, round_=r, example=e) for e in "ab" for r in (1, 2) for a in (0, 1)
            for s in range(3)]
    groups = tensorize(rows).groups
    for i, x in enumerate(rows):
        for j, y in enumerate(rows):
            same = (x.example_id, x.round, x.agent) == (y.example_id, y.round, y.agent)
            assert bool(groups[i] == groups[j]) == same


def test_oracle_label_is_the_best_action_with_ties_to_the_cheaper():
    p, r, c = (ACTIONS.index(a) for a in (Action.PERSIST, Action.REFINE, Action.CONCEDE))
    rewards = torch.tensor([[1.0, 1.0, 1.0], [0.0, 1.0, 1.0], [0.0, 1.0, 0.0], [-1.0, -1.0, -2.0],
                            [0.0, 0.0, 1.0]])
    assert oracle_labels(rewards).tolist() == [p, c, r, p, c]


def test_split_holds_out_whole_questions_deterministically():
    rows = [decision(example=f"q{e}", sample=s) for e in range(10) for s in range(4)]
    train, val = split_by_example(tensorize(rows), 0.3, seed=5)
    assert not set(train.examples) & set(val.examples)
    assert 1 <= len(set(val.examples)) <= 9 and len(train) + len(val) == len(rows)
    again = split_by_example(tensorize(rows), 0.3, seed=5)[1]
    assert again.examples == val.examples
    assert split_by_example(tensorize(rows), 0.0, seed=5)[1].examples == ()


def test_split_keeps_each_question_on_its_side_as_the_data_grows():
    """A policy trained on an earlier snapshot never sees a question the larger snapshot holds out."""
    rows = [decision(example=f"q{e}", sample=s) for e in range(400) for s in range(2)]
    small_train, small_val = split_by_example(tensorize(rows[:100]), 0.2, seed=3)
    big_train, big_val = split_by_example(tensorize(rows), 0.2, seed=3)
    assert set(small_train.examples) <= set(big_train.examples) and set(small_val.examples) <= set(big_val.examples)
    assert 0.15 < len(set(big_val.examples)) / 400 < 0.25  # about the fraction asked for
    assert set(split_by_example(tensorize(rows), 0.2, seed=4)[1].examples) != set(big_val.examples)


def test_split_needs_two_questions_for_validation():
    with pytest.raises(DelibError, match="at least 2 questions"):
        split_by_example(tensorize([decision(), decision(sample=1)]), 0.2, seed=0)


@pytest.mark.parametrize("field, value, message", [
    ("rewards", (0.0, math.nan, 1.0), "NaN/inf"),
    ("rewards", (0.0, 1.0), "malformed"),
    ("own", (1.0, math.inf), "NaN/inf"),
    ("peers", ((1.0, 2.0, 3.0),), "width"),
])
def test_bad_records_name_the_decision(field, value, message):
    bad = dataclasses.replace(decision(example="q9", sample=3), **{field: value})
    with pytest.raises(DelibError, match=message) as err:
        tensorize([decision(), bad])
    assert "example 'q9', sample 3" in str(err.value)


def test_empty_decisions_raise():
    with pytest.raises(DelibError, match="no training decisions"):
        tensorize([])


def test_group_size_keeps_the_first_k_samples_of_every_question(make_decisions):
    decisions = make_decisions(n_examples=5, group_size=8)
    kept = first_samples(decisions, 3)
    assert {d.sample for d in kept} == {0, 1, 2} and len(kept) == len(decisions) * 3 // 8
    assert first_samples(decisions, None) == decisions
    groups = torch.bincount(tensorize(kept).groups)
    assert groups.min() == groups.max() == 3  # every (question, round, agent) is ranked over 3 samples
    with pytest.raises(DelibError, match="--group-size 9 is more than the 8 joint actions"):
        first_samples(decisions, 9)
