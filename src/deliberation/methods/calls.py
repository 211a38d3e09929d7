"""The LLM calls one question costs a method, as its options fix them: what ``delib experiment --plan``
(``runs/plan.py``) multiplies into a grid's calls, tokens and hours before anything runs.

Calls, unlike tokens, follow from the options: self-consistency sends ``--agents`` samples, debate every agent
every round. Where a method stops early (at agreement, once two hints agree) the options fix only a range, so
a method gives ``Calls``: the least and the most of each kind. ``answers`` write a solution (each a full
completion, whose length the plan must assume); ``critics`` ask the critic for its P(Yes), one generated token
each (eight with verbal confidence: ``engine/confidence.critic_request``). A method entry's ``calls`` gives
them (``methods/base.Method.call_bounds``); the methods of the round loop share ``loop_calls``, derived from
their spec. tests/methods/test_call_bounds.py runs every method and checks that each question's calls fall in its
range.
"""

from __future__ import annotations

from dataclasses import dataclass

from deliberation.actions import Action
from deliberation.config import EngineConfig
from deliberation.engine.spec import MethodSpec
from deliberation.errors import DelibError


@dataclass(frozen=True)
class Calls:
    """Per question: ``answers`` and ``critics`` as (least, most) ranges (module docstring)."""

    answers: tuple[int, int]
    critics: tuple[int, int] = (0, 0)

    def __post_init__(self) -> None:
        for least, most in (self.answers, self.critics):
            if not 0 <= least <= most:
                raise DelibError(f"a call range must be 0 <= least <= most, got ({least}, {most})")


def exactly(answers: int, critics: int = 0) -> Calls:
    """A method whose calls do not depend on the answers (cot, self-consistency, a fixed graph)."""
    return Calls((answers, answers), (critics, critics))


_NO_CALL = (Action.PERSIST, Action.CONCEDE)
"""Actions that need no LLM call (docs/design.md, section Meta-actions); REFINE and RESAMPLE are answer calls."""


def loop_calls(spec: MethodSpec, engine: EngineConfig) -> Calls:
    """The round loop's calls (``engine/loop.run_episode``) under ``engine`` (the engine the method runs:
    ``Method.engine`` applied). Round 0: N answers. Each of the R rounds: up to N answer calls (REFINE or
    RESAMPLE), none under a policy that only persists or concedes; the least is none, since the stop rule
    may end deliberation after round 0, unless every agent always refines and the rule never holds (debate,
    or no early stop). With the critic on, every new answer is judged once; a lazy critic may skip them all
    (``engine.loop.critics_read``)."""
    n, rounds = engine.agents, engine.rounds if spec.policy is not None else 0
    action = getattr(spec.policy, "action", None)  # a ConstantPolicy's one action; None for any other policy
    later = 0 if action in _NO_CALL else n * rounds
    stops = engine.early_stop and spec.stop(["same"] * n)  # a rule a unanimous team does not meet never holds
    least = n + (later if action is Action.REFINE and not stops else 0)
    answers = (least, n + later)
    critics = (0 if spec.lazy_critic else least, n + later) if spec.confidence else (0, 0)
    return Calls(answers, critics)
