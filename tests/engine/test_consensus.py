"""Votes and the leave-one-out vote on hand-made cases."""

import pytest

from deliberation.engine.consensus import Ballot, leave_one_out, share_above, support, unanimous, vote


@pytest.mark.parametrize(
    "ballots, weighted, expected",
    [
        ([Ballot("1"), Ballot("1"), Ballot("2")], False, "1"),
        ([Ballot("2"), Ballot("1"), Ballot("1")], False, "1"),
        ([Ballot("1", 0.2), Ballot("2", 0.9), Ballot(None, 1.0)], False, "2"),  # tie -> confidence
        ([Ballot("1", 0.9), Ballot("2", 0.2)], False, "1"),
        ([Ballot("1", 0.5), Ballot("2", 0.5)], False, "1"),  # full tie -> first seen
        ([Ballot(None), Ballot(None)], False, None),  # unparseable never wins
        ([Ballot(None), Ballot(None), Ballot("3")], False, "3"),
        ([Ballot("1", 0.3), Ballot("1", 0.3), Ballot("2", 0.95)], True, "2"),  # 0.95 > 0.6 weighted
        ([Ballot("1", 0.3), Ballot("1", 0.3), Ballot("2", 0.95)], False, "1"),
        ([], False, None),
    ],
)
def test_vote(ballots, weighted, expected):
    assert vote(ballots, weighted=weighted) == expected


def test_leave_one_out_removes_exactly_one_agent():
    ballots = [Ballot("7", 0.9), Ballot("5", 0.6), Ballot("5", 0.5)]
    assert vote(ballots) == "5"
    assert leave_one_out(ballots, 0) == "5"
    assert leave_one_out(ballots, 1) == "7"  # "7" (0.9) beats "5" (0.5) on confidence
    assert leave_one_out(ballots, 2) == "7"


def test_support_unanimous_and_share():
    keys = ["a", "a", None]
    assert support(keys, "a") == 2 and support(keys, None) == 0
    assert not unanimous(keys) and unanimous(["a", "a"]) and not unanimous([None, None])
    assert share_above(["a", "a", "a"], 2 / 3) and not share_above(["a", "a", "b"], 2 / 3)
    assert share_above(["a", "a", "a", "b"], 2 / 3)
