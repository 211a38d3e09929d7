"""Allocator training on hand-made paths whose best moves are known: the hindsight labels are those moves,
SFT learns them and SoftRankPO keeps them, SoftRankPO alone finds a one-decision optimum from a random
start, and a large lambda stops at the team."""

from __future__ import annotations

import numpy as np
import pytest

from deliberation.allocate.moves import MOVES, Move
from deliberation.allocate.network import LearnedAllocator
from deliberation.allocate.state import FEATURE_NAMES, Sample, State, features
from deliberation.rl.allocation.paths import Branch, Path, simulate
from deliberation.rl.allocation.config import AllocatorTraining
from deliberation.rl.allocation.train import hindsight, table, train

LIMIT, TEAM, COST = 6, 3, 100  # every sample costs 100 tokens


def branch(right_from: int, keys: str) -> Branch:
    """A branch whose samples answer ``keys`` (a character each) and whose vote is right from ``right_from``
    draws on."""
    states = tuple(State(tuple(Sample(k, None, 1.0) for k in keys[:d])) for d in range(LIMIT + 1))
    feats = np.stack([np.zeros(len(FEATURE_NAMES), np.float32)] + [features(s) for s in states[1:]])
    correct = np.arange(LIMIT + 1) >= right_from
    return Branch(states, feats, correct, np.arange(LIMIT + 1) * COST)


def paths(n: int = 20) -> list[Path]:
    """Easy questions (the team agrees and is right) and hard ones (every sample differs; right from 5)."""
    return [Path(f"q{i}", "toy", TEAM, branch(3, "aaaaaa") if i % 2 else branch(5, "abcdef")) for i in range(n)]


def outcomes(net, found: list[Path]) -> list[tuple[bool, int]]:
    allocator = LearnedAllocator(net, 1, {}, first=TEAM)
    return [(o.correct, o.drawn) for o in (simulate(p, allocator) for p in found)]


def test_the_hindsight_label_is_the_best_move():
    tab = table(paths(2), AllocatorTraining(lam=0.1))
    value, label = hindsight(tab)
    # hard question (q0): points at 3, 4, 5 draws; resample twice, then stop (right from 5, cheapest)
    assert [MOVES[m] for m in label[:3]] == [Move.RESAMPLE, Move.RESAMPLE, Move.STOP]
    assert value[0] == pytest.approx(1 - 0.1 * 500 / 1000)
    assert MOVES[label[3]] is Move.STOP and value[3] == pytest.approx(1 - 0.1 * 300 / 1000)  # easy question (q1)
    tab = table(paths(2), AllocatorTraining(lam=5.0))  # 500 tokens cost 2.5 points: never worth a sample
    assert MOVES[hindsight(tab)[1][0]] is Move.STOP


@pytest.mark.parametrize("stages", [{"rl_epochs": 0}, {}], ids=["sft", "sft-then-softrankpo"])
def test_training_finds_the_known_optimum(stages):
    net, _ = train(paths(), AllocatorTraining(lam=0.1, **stages))
    assert outcomes(net, paths()) == [(True, 3) if i % 2 else (True, 5) for i in range(20)]


def test_softrankpo_alone_learns_one_decision_from_a_random_start():
    """One decision a question (4 samples at most): stop where the team is right, resample where it is not.
    (With longer horizons SoftRankPO alone can collapse to STOP: ranks give an easy question's token savings
    as much weight as a hard one's correctness, and a group whose trajectories agree has no gradient; hence
    the SFT stage first.)"""
    found = [Path(f"q{i}", "toy", TEAM, branch(3, "aaaa") if i % 2 else branch(4, "abcd")) for i in range(20)]
    found = [Path(p.example_id, p.benchmark, p.team, _cut(p.plain, 4)) for p in found]
    net, _ = train(found, AllocatorTraining(lam=0.1, sft_epochs=0, kl=0.0, rl_epochs=300))
    assert outcomes(net, found) == [(True, 3) if i % 2 else (True, 4) for i in range(20)]


def _cut(branch_: Branch, limit: int) -> Branch:
    return Branch(branch_.states[: limit + 1], branch_.features[: limit + 1], branch_.correct[: limit + 1],
                  branch_.tokens[: limit + 1])


def test_a_large_lambda_stops_at_the_team():
    net, _ = train(paths(), AllocatorTraining(lam=5.0, rl_epochs=100))
    assert {drawn for _, drawn in outcomes(net, paths())} == {TEAM}
