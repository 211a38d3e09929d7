"""Properties of SoftRankPO and the comparator advantages (docs/design.md, section SoftRankPO), a
plain-Python reference for the vectorized SoftRankPO, and hand-computed cases."""

from __future__ import annotations

import math
import statistics
from statistics import NormalDist

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from deliberation.rl.advantages import ADVANTAGES, grpo, reinforce, reinforce_baseline, rloo, softrankpo
from deliberation.rl.algorithms import ALGORITHMS

PHI_INV = NormalDist().inv_cdf
CENTRED = {
    "softrankpo-hard": lambda r, g: softrankpo(r, g, tau=0.0),
    "softrankpo-soft": lambda r, g: softrankpo(r, g, tau=0.7),
    "grpo": grpo,
    "reinforce_baseline": reinforce_baseline,
    "rloo": rloo,
}
SOFTRANK_MODES = {"hard": 0.0, "soft": 0.5}
SMALL_INTS = st.integers(min_value=-6, max_value=6)


@st.composite
def grouped(draw, values=st.floats(-50, 50, allow_nan=False), min_size: int = 2, max_size: int = 9):
    """(rewards (N,) float64, groups (N,) long) with 1-4 groups, members interleaved in random order and
    group ids that are neither contiguous nor sorted."""
    sizes = draw(st.lists(st.integers(min_size, max_size), min_size=1, max_size=4))
    ids = draw(st.lists(st.integers(0, 1000), min_size=len(sizes), max_size=len(sizes), unique=True))
    pairs = [(draw(values), gid) for gid, size in zip(ids, sizes) for _ in range(size)]
    pairs = draw(st.permutations(pairs))
    rewards = torch.tensor([float(r) for r, _ in pairs], dtype=torch.float64)
    return rewards, torch.tensor([g for _, g in pairs], dtype=torch.long)


def members(groups: torch.Tensor):
    """Boolean masks (N,) of each group."""
    return [groups == g for g in groups.unique()]


def reference_softrankpo(rewards: list[float], groups: list[int], tau: float) -> list[float]:
    """Plain loops straight from docs/design.md, section SoftRankPO, with the standard library's normal quantile."""
    out = [0.0] * len(rewards)
    for g in set(groups):
        idx = [i for i, gi in enumerate(groups) if gi == g]
        r = [rewards[i] for i in idx]
        scores = _reference_hard(r) if tau == 0 else _reference_soft(r, tau)
        for i, a in zip(idx, scores):
            out[i] = a
    return out


def _reference_hard(r: list[float]) -> list[float]:
    k, ordered = len(r), sorted(r)
    return [statistics.fmean(PHI_INV((p + 0.5) / k) for p, v in enumerate(ordered) if v == x) for x in r]


def _reference_soft(r: list[float], tau: float) -> list[float]:
    k = len(r)
    sd = statistics.pstdev(r) or 1.0
    q = [PHI_INV(sum(1 / (1 + math.exp(-(rk - rj) / (tau * sd))) for rj in r) / k) for rk in r]
    mean = statistics.fmean(q)
    return [x - mean for x in q]


@settings(max_examples=60, deadline=None)
@given(data=grouped())
@pytest.mark.parametrize("name", sorted(CENTRED))
def test_centred_advantages_sum_to_zero_per_group(name, data):
    rewards, groups = data
    adv = CENTRED[name](rewards, groups)
    for m in members(groups):
        assert abs(float(adv[m].sum())) < 1e-9 * max(1.0, float(adv[m].abs().sum()))


@settings(max_examples=60, deadline=None)
@given(data=grouped(values=SMALL_INTS))
@pytest.mark.parametrize("name", sorted(CENTRED))
def test_equal_rewards_get_equal_advantages(name, data):
    rewards, groups = data
    adv = CENTRED[name](rewards, groups)
    same = (rewards[:, None] == rewards[None, :]) & (groups[:, None] == groups[None, :])  # (N, N)
    i, j = torch.nonzero(same, as_tuple=True)
    assert torch.allclose(adv[i], adv[j], atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(value=st.floats(-1e300, 1e300, allow_nan=False), k=st.integers(1, 12))
@pytest.mark.parametrize("name", sorted(CENTRED))
def test_constant_group_gets_zero(name, value, k):
    adv = CENTRED[name](torch.full((k,), value, dtype=torch.float64), torch.zeros(k, dtype=torch.long))
    assert torch.equal(adv, torch.zeros(k, dtype=torch.float64))


@settings(max_examples=80, deadline=None)
@given(data=grouped(values=SMALL_INTS), a=st.floats(0.01, 100), b=st.floats(-100, 100))
@pytest.mark.parametrize("mode", sorted(SOFTRANK_MODES))
def test_softrankpo_is_invariant_to_positive_affine_maps(mode, data, a, b):
    rewards, groups = data
    tau = SOFTRANK_MODES[mode]
    before, after = softrankpo(rewards, groups, tau=tau), softrankpo(a * rewards + b, groups, tau=tau)
    assert torch.allclose(before, after, atol=1e-9)


@settings(max_examples=80, deadline=None)
@given(data=grouped(values=st.floats(-1e6, 1e6, allow_nan=False), max_size=30))
def test_hard_mode_is_bounded_by_the_extreme_normal_score(data):
    rewards, groups = data
    adv = softrankpo(rewards, groups)
    for m in members(groups):
        k = int(m.sum())
        assert float(adv[m].abs().max()) <= PHI_INV(1 - 1 / (2 * k)) + 1e-12


@settings(max_examples=80, deadline=None)
@given(data=grouped(values=st.integers(-10, 10)), tau=st.sampled_from([0.0, 0.05, 0.5, 5.0]))
def test_softrankpo_is_strictly_monotone_in_the_reward(data, tau):
    rewards, groups = data
    adv = softrankpo(rewards, groups, tau=tau)
    better = (rewards[:, None] > rewards[None, :]) & (groups[:, None] == groups[None, :])  # (N, N)
    i, j = torch.nonzero(better, as_tuple=True)
    assert bool((adv[i] > adv[j]).all())


@settings(max_examples=150, deadline=None)
@given(data=grouped(values=st.floats(allow_nan=False, allow_infinity=False), min_size=1),
       tau=st.sampled_from([0.0, 1e-300, 1e-3, 1.0, 1e300]))
def test_softrankpo_is_finite_for_every_finite_input(data, tau):
    rewards, groups = data
    assert bool(torch.isfinite(softrankpo(rewards, groups, tau=tau)).all())


@pytest.mark.parametrize("rewards", [[1e308, -1e308, 5e-324, 0.0], [1e-320, 2e-320, 5e-324, 0.0],
                                     [1.7e308, 1.7e308, -1.7e308, 1e-300]])
@pytest.mark.parametrize("tau", [0.0, 1e-300, 0.3])
def test_softrankpo_is_finite_at_extreme_magnitudes(rewards, tau):
    adv = softrankpo(torch.tensor(rewards, dtype=torch.float64), torch.zeros(len(rewards), dtype=torch.long), tau)
    assert bool(torch.isfinite(adv).all())
    assert abs(float(adv.sum())) < 1e-9


@settings(max_examples=60, deadline=None)
@given(data=grouped(values=st.floats(-1e100, 1e100, allow_nan=False), min_size=1))
@pytest.mark.parametrize("name", sorted(ADVANTAGES))
def test_every_advantage_is_finite_for_finite_rewards(name, data):
    rewards, groups = data
    assert bool(torch.isfinite(advantage(name)(rewards, groups)).all())


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("name", sorted(ADVANTAGES))
def test_non_finite_rewards_raise_value_error(name, bad):
    rewards = torch.tensor([1.0, bad, 0.0, 2.0])
    with pytest.raises(ValueError, match="NaN or inf"):
        advantage(name)(rewards, torch.tensor([0, 0, 1, 1]))


def test_soft_mode_rejects_negative_tau():
    with pytest.raises(ValueError, match="tau"):
        softrankpo(torch.tensor([1.0, 2.0]), torch.tensor([0, 0]), tau=-0.1)


@settings(max_examples=100, deadline=None)
@given(data=grouped(values=st.integers(-4, 4), min_size=1), tau=st.sampled_from([0.0, 0.1, 0.5, 2.0]))
def test_vectorized_softrankpo_matches_the_plain_loop(data, tau):
    rewards, groups = data
    expected = reference_softrankpo(rewards.tolist(), groups.tolist(), tau)
    assert torch.allclose(softrankpo(rewards, groups, tau=tau), torch.tensor(expected, dtype=torch.float64),
                          atol=1e-9)


def test_hand_computed_hard_scores_distinct_and_tied():
    rewards = torch.tensor([3.0, 1.0, 2.0, 0.0, 5.0, 5.0, 1.0])
    groups = torch.tensor([0, 0, 0, 0, 1, 1, 1])
    tied = (PHI_INV(1.5 / 3) + PHI_INV(2.5 / 3)) / 2  # the two 5s occupy positions 2 and 3 of K = 3
    expected = [PHI_INV(0.875), PHI_INV(0.375), PHI_INV(0.625), PHI_INV(0.125), tied, tied, PHI_INV(0.5 / 3)]
    assert torch.allclose(softrankpo(rewards, groups), torch.tensor(expected), atol=1e-6)


def test_soft_mode_approaches_hard_ranks_as_tau_goes_to_zero():
    rewards, groups = torch.tensor([0.3, -1.0, 2.5, 0.7, 9.0], dtype=torch.float64), torch.zeros(5, dtype=torch.long)
    assert torch.allclose(softrankpo(rewards, groups, tau=1e-4), softrankpo(rewards, groups), atol=1e-9)


def test_hand_computed_comparators():
    rewards, groups = torch.tensor([1.0, 3.0, 2.0, 4.0]), torch.tensor([0, 0, 1, 1])
    assert torch.allclose(grpo(rewards, groups), torch.tensor([-1.0, 1.0, -1.0, 1.0]), atol=1e-5)
    assert torch.equal(reinforce(rewards, groups), rewards)
    assert torch.equal(reinforce_baseline(rewards, groups), torch.tensor([-1.0, 1.0, -1.0, 1.0]))
    three = torch.tensor([0.0, 3.0, 6.0])
    assert torch.allclose(rloo(three, torch.zeros(3, dtype=torch.long)), torch.tensor([-4.5, 0.0, 4.5]))


@pytest.mark.parametrize("name", ["softrankpo", "grpo", "reinforce_baseline", "rloo"])
def test_groups_of_one_get_zero(name):
    adv = advantage(name)(torch.tensor([5.0, -2.0, 1.0]), torch.tensor([0, 1, 2]))
    assert torch.equal(adv, torch.zeros(3))


def advantage(name):
    return ADVANTAGES[name].fn


def test_every_advantage_is_trained_by_the_algorithm_of_its_name():
    """The trainer reads advantages only through ALGORITHMS: each registered advantage function is the one its
    algorithm computes (a hand-built case: group [0, 3, 6] -> the function's own hand-checked values)."""
    rewards, groups = torch.tensor([0.0, 3.0, 6.0]), torch.zeros(3, dtype=torch.long)
    expected = {"softrankpo": [PHI_INV(0.5 / 3), 0.0, PHI_INV(2.5 / 3)], "grpo": [-math.sqrt(1.5), 0.0, math.sqrt(1.5)],
                "reinforce": [0.0, 3.0, 6.0], "reinforce_baseline": [-3.0, 0.0, 3.0], "rloo": [-4.5, 0.0, 4.5]}
    assert set(expected) == set(ADVANTAGES)
    cfg = type("Cfg", (), {"tau": 0.0, "clip_eps": None})()
    for name, values in expected.items():
        got = ALGORITHMS[name].advantages(rewards, groups, cfg)
        assert torch.allclose(got.double(), torch.tensor(values, dtype=torch.float64), atol=1e-5), name


def test_float32_rewards_come_back_float32():
    adv = softrankpo(torch.tensor([1.0, 2.0], dtype=torch.float32), torch.tensor([0, 0]), tau=0.5)
    assert adv.dtype == torch.float32


def test_grpo_group_differing_only_by_rounding_sums_to_zero():
    """Found by hypothesis: two rewards equal up to rounding, std far below eps."""
    rewards = torch.tensor([-50.0, -50.0 + 7.105427357601002e-15], dtype=torch.float64)
    adv = advantage("grpo")(rewards, torch.tensor([0, 0]))
    assert abs(float(adv.sum())) < 1e-15
