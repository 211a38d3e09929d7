"""Baselines that spend samples adaptively or weigh them: adaptive-consistency's Beta stopping
rule, and CISC's confidence-weighted vote."""

from __future__ import annotations

import json
import math

import pytest

from deliberation.cli.main import main
from deliberation.engine.adaptive import leader_probability, settled
from deliberation.engine.loop import AgentRecord, ballot_weights
from deliberation.engine.spec import MethodSpec, VoteWeights
from deliberation.errors import DelibError
from deliberation.types import LogprobSummary


@pytest.mark.parametrize("v1, v2, expected", [(1, 0, 0.75), (3, 0, 0.9375), (4, 0, 0.96875), (3, 1, 0.8125)])
def test_leader_probability_is_the_beta_posterior_share_above_one_half(v1, v2, expected):
    assert leader_probability(v1, v2) == pytest.approx(expected)


def test_sampling_stops_once_the_leader_is_settled():
    assert not settled(["7", "7", "7"]) and settled(["7", "7", "7", "7"])  # 0.9375, then 0.969 > 0.95
    assert not settled(["7", "7", "7", "7", "9"]) and not settled([None, None])
    assert settled(["7", "7", "7", "7", None])  # unparseable answers do not count against the leader


def record(key, confidence=None, mean=None):
    summary = None if mean is None else LogprobSummary(mean, mean, (), (0,))
    return AgentRecord("", key, confidence, 10, False, summary=summary)


def test_cisc_weighs_each_ballot_by_softmax_of_its_confidence():
    team = [record("7", 0.9), record("9", 0.5), record("9", None)]
    weights = ballot_weights(MethodSpec("cisc", None, vote_weights=VoteWeights("critic", 0.1)), team)
    assert weights == pytest.approx([1.0, math.exp(-4), math.exp(-4)])  # no confidence: as the least confident
    assert ballot_weights(MethodSpec("sc", None), team) == [1.0, 1.0, 1.0]
    by_logprob = ballot_weights(MethodSpec("c", None, vote_weights=VoteWeights("logprob-mean", 0.1)),
                                [record("7", mean=-0.2), record("9", mean=-0.3)])
    assert by_logprob == pytest.approx([1.0, math.exp(-1)])


def episodes(path):
    return [json.loads(line) for line in (path / "episodes.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("signal, temperature, message", [("critc", 0.1, "unknown vote signal 'critc'; choose"),
                                                          ("critic", 0.0, "vote temperature must be > 0")])
def test_a_vote_weighting_of_an_unknown_signal_is_refused_where_it_is_defined(signal, temperature, message):
    """A method's typo fails when the method is registered, not at its first vote after generating."""
    with pytest.raises(DelibError, match=message):
        VoteWeights(signal, temperature)


def test_adaptive_consistency_draws_fewer_samples_where_they_agree(tmp_path):
    """Over scripted questions, adaptive-consistency with at most 6 samples draws between 4 and 6 per
    question (4 when the first four agree), its samples are self-consistency's, and its tokens never
    exceed self-consistency's at k = 6."""
    common = ("--backend", "scripted", "--limit", "8", "--agents", "6", "--quiet")
    assert main(["run", "--method", "adaptive-consistency", *common, "--out", str(tmp_path / "ac")]) == 0
    assert main(["run", "--method", "self-consistency", *common, "--out", str(tmp_path / "sc")]) == 0
    for ac, sc in zip(episodes(tmp_path / "ac"), episodes(tmp_path / "sc")):
        drawn = len(ac["turns"])
        assert 1 <= drawn <= 6 and ac["turns"] == sc["turns"][:drawn]
        keys = [t["answer"] for t in ac["turns"]]
        assert settled(keys) or drawn == 6
        assert not any(settled(keys[:k]) for k in range(1, drawn))  # it stopped at the first settled prefix
    assert sum(len(e["turns"]) for e in episodes(tmp_path / "ac")) < 8 * 6  # some question stopped early
