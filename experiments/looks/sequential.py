"""The paired experiment's stopping rule: sequential looks with O'Brien-Fleming boundaries and futility.

docs/results/paired/PREREGISTRATION.md (amendment 1) registers four equally spaced looks (n = 150 k
questions at look k) at overall two-sided alpha 0.05. Efficacy: the McNemar statistic of the primary
comparison, z = (b - c) / sqrt(b + c) (b = only the learned policy right, c = only the best rule right),
passes the look's O'Brien-Fleming boundary (Lan & DeMets 1983's spending approximates the same values;
O'Brien & Fleming 1979). Futility: the upper end of the paired 95% interval of (oracle minus best rule),
or of (learned minus best rule), is below +2 points: no policy over these actions can gain 2 points, or
this one does not (an end at +2 points up to rounding is not below them, and a look whose learned or
oracle arm does not share every question with the best rule is refused: amendment 3; that the look holds
its whole block is checked by experiments/paired_look.py). The decision is a pure function of the paired
comparisons, so a look's record says exactly which rule stopped it. ``check_order`` holds the looks to
their registered order: the boundaries assume every earlier look was taken, and a stopped design takes none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from deliberation.errors import DelibError
from deliberation.report.paired import Paired

BOUNDARIES = (4.05, 2.86, 2.34, 2.02)
"""|z| boundaries at looks 1-4 (O'Brien-Fleming, four equally spaced looks, two-sided alpha 0.05)."""
FUTILITY_POINTS = 0.02
"""The smallest gain worth having: 2 points of accuracy."""
ROUNDING = 1e-9
"""An interval's end equal to +2 points up to floating-point rounding is not below them: at every look 2
points is a whole number of questions (3 of 150), so a bootstrap end lands exactly there often, and computed
it reads 0.020000000000000018 or 0.019999999999999907 by the accuracies' digits alone."""


@dataclass(frozen=True)
class LookDecision:
    """What look ``look`` decides, and why."""

    look: int
    z: float
    boundary: float
    stop: bool
    reason: str  # "efficacy: learned better", "efficacy: rule better", "futility: oracle", "futility: learned",
    # "final look", or "continue"


def mcnemar_z(only_row: int, only_reference: int) -> float:
    """(b - c) / sqrt(b + c); 0 without discordant questions."""
    n = only_row + only_reference
    return 0.0 if n == 0 else (only_row - only_reference) / math.sqrt(n)


def decide(look: int, primary: Paired, oracle: Paired) -> LookDecision:
    """The registered decision at ``look`` (1-based) from the pooled primary comparison (learned vs best rule)
    and the oracle's (oracle vs best rule)."""
    if not 1 <= look <= len(BOUNDARIES):
        raise DelibError(f"look {look} is not registered; the design has looks 1-{len(BOUNDARIES)}")
    incomplete = [p.label for p in (primary, oracle) if p.unpaired]
    if incomplete:
        raise DelibError(f"look {look} is incomplete: {', '.join(incomplete)} and the best rule do not share every "
                         "question; rerun the look's replays (a look is taken only on its whole block)")
    z, boundary = mcnemar_z(primary.only_row, primary.only_reference), BOUNDARIES[look - 1]
    if abs(z) >= boundary:
        reason = "efficacy: learned better" if z > 0 else "efficacy: rule better"
    elif _below(oracle.accuracy_diff_ci95[1]):
        reason = "futility: oracle"
    elif _below(primary.accuracy_diff_ci95[1]):
        reason = "futility: learned"
    else:
        reason = "final look" if look == len(BOUNDARIES) else "continue"
    return LookDecision(look, z, boundary, reason != "continue", reason)


def _below(upper: float) -> bool:
    """Whether an interval's upper end is below +2 points (``ROUNDING``)."""
    return upper < FUTILITY_POINTS - ROUNDING


def check_order(look: int, taken: Sequence[dict[str, Any]]) -> None:
    """Refuse look ``look`` (1-based) unless every earlier look is recorded in ``taken`` (summary.json's looks)
    and none of them stopped. The latest look may be retaken (a rerun of its replays, which are deterministic:
    the same record again), also one that stopped; a look before a recorded one may not be taken."""
    if not 1 <= look <= len(BOUNDARIES):
        raise DelibError(f"look {look} is not registered; the design has looks 1-{len(BOUNDARIES)}")
    done = {int(x["look"]): x for x in taken}
    stopped = sorted(k for k, x in done.items() if k < look and x["decision"]["stop"])
    if stopped:
        raise DelibError(f"look {stopped[0]} stopped the design ({done[stopped[0]]['decision']['reason']}); "
                         f"no look {look} is taken")
    missing = [k for k in range(1, look) if k not in done]
    if missing:
        raise DelibError(f"look {look} comes after look {missing[0]}, which is not recorded; take the looks in "
                         "order (the boundaries assume every earlier look)")
    later = sorted(k for k in done if k > look)
    if later:
        raise DelibError(f"look {later[-1]} is recorded; look {look} cannot be taken after it")
