"""The meta-actions an agent takes in a deliberation round, and the action sets a policy chooses among.

The paper's three (PERSIST, REFINE, CONCEDE; docs/design.md, section Meta-actions) are the default set;
RESAMPLE (docs/design.md, section RESAMPLE) extends it. Every set is a prefix of ``ACTION_ORDER``, so an
action's index (a policy's logit, a reward tuple's entry) is the same in every set.
"""

from __future__ import annotations

import enum

from deliberation.errors import DelibError


class Action(str, enum.Enum):
    """A meta-action an agent takes in a deliberation round (docs/design.md, section Meta-actions)."""

    PERSIST = "persist"  # keep the answer, no LLM call
    REFINE = "refine"  # one LLM call: improve the own solution in the light of the peers'
    CONCEDE = "concede"  # adopt the answer of a peer chosen by a fixed rule, no LLM call
    RESAMPLE = "resample"  # one LLM call: discard the answer, draw a fresh independent one (beyond the paper)


ACTIONS: tuple[Action, ...] = (Action.PERSIST, Action.REFINE, Action.CONCEDE)
"""The paper's three actions, in the order every policy's logits and every reward tuple use."""
ACTION_ORDER: tuple[Action, ...] = (*ACTIONS, Action.RESAMPLE)
"""Every action; each action set is a prefix of it, so an action's index is the same in every set."""
PAPER_ACTIONS = "paper"
"""The default action set's name: the paper's three actions."""
EXTENDED_ACTIONS = "resample"
"""The extended set's name: the paper's three actions and RESAMPLE (docs/design.md, section RESAMPLE)."""
ACTION_SETS: dict[str, tuple[Action, ...]] = {PAPER_ACTIONS: ACTIONS, EXTENDED_ACTIONS: ACTION_ORDER}
"""The action sets a policy may choose from (``--actions``): the paper's three (the default), or with RESAMPLE."""
COST_ORDER: tuple[Action, ...] = (Action.PERSIST, Action.CONCEDE, Action.RESAMPLE, Action.REFINE)
"""Cheapest first: no call, no call, a call on the short round-0 prompt, a call on the long update prompt.
Ties between equally rewarded actions go to the cheaper one (oracle labels, the oracle method)."""


def by_cost(actions: tuple[Action, ...]) -> tuple[Action, ...]:
    """``actions`` cheapest first (``COST_ORDER``)."""
    return tuple(a for a in COST_ORDER if a in actions)


def check_action_set(name: str) -> None:
    """DelibError naming the registered action sets when ``name`` is none of them."""
    if name not in ACTION_SETS:
        raise DelibError(f"unknown actions {name!r}; choose one of {', '.join(ACTION_SETS)}")


def action_set(n: int) -> tuple[Action, ...]:
    """The registered action set of ``n`` actions (a reward tuple's or a network head's length)."""
    found = [s for s in ACTION_SETS.values() if len(s) == n]
    if not found:
        raise DelibError(f"no action set has {n} actions; the sets are "
                         f"{', '.join(f'{k} ({len(v)})' for k, v in ACTION_SETS.items())}")
    return found[0]
