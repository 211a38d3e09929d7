"""The paired experiment's stopping rule (experiments/looks/sequential.py): O'Brien-Fleming efficacy boundaries at
four looks and the two futility rules, as PREREGISTRATION.md amendment 1 registers them."""

from __future__ import annotations

import re

import pytest

from deliberation.errors import DelibError
from deliberation.report.paired import Paired

from looks.sequential import BOUNDARIES, check_order, decide, mcnemar_z


def paired(b: int, c: int, hi: float, n: int = 150) -> Paired:
    return Paired("row", "best rule", "pooled", n, 50, b, c, n - 50 - b - c, 1.0, (b - c) / n, (-0.1, hi), 1.0,
                  (1.0, 1.0))


def test_the_boundaries_are_the_registered_ones_and_z_is_mcnemars():
    assert BOUNDARIES == (4.05, 2.86, 2.34, 2.02)
    assert mcnemar_z(30, 10) == pytest.approx(20 / 40**0.5) and mcnemar_z(0, 0) == 0.0


@pytest.mark.parametrize("look, b, c, reason", [
    (1, 30, 10, "continue"),  # z = 3.16 < 4.05
    (2, 30, 10, "efficacy: learned better"),  # 3.16 >= 2.86
    (3, 10, 30, "efficacy: rule better"),
    (4, 15, 10, "final look"),
])
def test_efficacy_and_the_final_look(look, b, c, reason):
    decision = decide(look, paired(b, c, hi=0.1), paired(40, 0, hi=0.3))
    assert decision.reason == reason and decision.stop == (reason != "continue")
    assert decision.boundary == BOUNDARIES[look - 1]


def test_futility_when_even_the_oracle_cannot_gain_two_points():
    assert decide(1, paired(3, 2, hi=0.05), paired(4, 0, hi=0.019)).reason == "futility: oracle"
    assert decide(1, paired(3, 2, hi=0.019), paired(40, 0, hi=0.3)).reason == "futility: learned"
    assert decide(1, paired(3, 2, hi=0.021), paired(40, 0, hi=0.3)).reason == "continue"


@pytest.mark.parametrize("hi", [0.02, 0.020000000000000018, 0.019999999999999907, 3 / 150])
def test_an_upper_end_at_two_points_up_to_rounding_is_not_below_them(hi):
    """2 points is a whole number of questions at every look (3 of 150): a bootstrap end lands there often,
    and its float reads above or below 0.02 by the accuracies' digits alone."""
    assert decide(1, paired(3, 2, hi=hi), paired(40, 0, hi=hi)).reason == "continue"
    assert decide(1, paired(3, 2, hi=hi - 1 / 150), paired(40, 0, hi=0.3)).reason == "futility: learned"


def test_a_look_whose_arms_do_not_share_every_question_is_refused():
    short = Paired("mpdf", "best rule", "pooled", 149, 50, 3, 2, 94, 1.0, 0.0, (-0.1, 0.1), 1.0, (1.0, 1.0),
                   unpaired=1)
    with pytest.raises(DelibError, match="look 1 is incomplete: mpdf and the best rule do not share every"):
        decide(1, short, paired(40, 0, hi=0.3))


def test_an_unregistered_look_is_refused():
    with pytest.raises(DelibError, match="looks 1-4"):
        decide(5, paired(1, 1, 0.1), paired(1, 1, 0.1))


def taken(*looks: tuple[int, bool]) -> list[dict]:
    """summary.json's looks: (look, whether it stopped)."""
    return [{"look": k, "decision": {"stop": stop, "reason": "futility: learned" if stop else "continue"}}
            for k, stop in looks]


@pytest.mark.parametrize("look, looks", [(1, ()), (2, ((1, False),)), (3, ((1, False), (2, False))),
                                         (2, ((1, False), (2, False)))])  # the latest look may be retaken
def test_a_look_after_every_earlier_one_that_did_not_stop_is_taken(look, looks):
    check_order(look, taken(*looks))


@pytest.mark.parametrize("look, looks, says", [
    (2, (), "look 2 comes after look 1, which is not recorded"),
    (3, ((1, False),), "look 3 comes after look 2, which is not recorded"),
    (2, ((1, True),), "look 1 stopped the design (futility: learned); no look 2 is taken"),
    (3, ((1, False), (2, True)), "look 2 stopped the design"),
    (1, ((1, False), (2, False)), "look 2 is recorded; look 1 cannot be taken after it"),
    (1, ((2, False),), "look 2 is recorded; look 1 cannot be taken after it"),
    (5, (), "look 5 is not registered"),
])
def test_a_look_out_of_order_or_after_a_stop_is_refused(look, looks, says):
    with pytest.raises(DelibError, match=re.escape(says)):
        check_order(look, taken(*looks))
