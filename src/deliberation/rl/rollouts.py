"""Rollout collection: episodes under a behaviour policy with the counterfactual outcome of every action.

At each decision point (round t, every agent i) the three outcomes are known at the cost of one REFINE
call per agent (one batch; cached): PERSIST keeps the answer, CONCEDE adopts the peer chosen by the
engine's rule, REFINE is the refined answer. K joint actions are then drawn from the behaviour policy and
scored, giving each agent K decisions (its group for ranking) whose rewards are (docs/design.md, section Rewards):
- r_local  = 1[agent i correct after the round] - 1[agent i correct before];
- r_global = 1[vote of all agents correct] - 1[vote without agent i correct] (leave-one-out);
recorded for each of the three actions given the other agents' sampled actions. That is the ``round``
reward, scored without further calls; the ``episode`` reward (rl/episode.py, registry rl/rewards.py)
measures both after the last round instead. The trajectory then continues with the first drawn joint
action.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from deliberation.engine.consensus import Ballot, leave_one_out, vote
from deliberation.engine.features import PAPER, FeatureSet, arrays
from deliberation.engine.loop import (AgentRecord, Context, act, initial_round, observation, run_rounds, score,
                                      without_call)
from deliberation.engine.spec import MetaPolicy, MethodSpec
from deliberation.actions import ACTION_ORDER, ACTIONS, Action
from deliberation.types import Decision, Turn


@dataclass(frozen=True)
class Outcomes:
    """Agent i's record after each action of the set (ACTION_ORDER) and what the calling actions cost."""

    after: tuple[AgentRecord, ...]
    refine_tokens: int
    resample_tokens: int | None = None  # None outside the four-action set


def counterfactuals(ctx: Context, records: list[AgentRecord], round_: int,
                    actions: tuple[Action, ...] = ACTIONS) -> list[Outcomes]:
    """Every agent's outcome under each action of ``actions``: the engine's ``act`` with REFINE for all (one
    REFINE batch, one critic batch), and with RESAMPLE for all when the set has it; PERSIST and CONCEDE
    need no call."""
    n = len(records)
    called = {a: act(ctx, records, [a] * n, round_) for a in (Action.REFINE, Action.RESAMPLE) if a in actions}
    cost = lambda a, i: sum(c.prompt_tokens + c.completion_tokens for c in called[a].calls[i])  # noqa: E731
    return [Outcomes(tuple(called[a].records[i] if a in called else without_call(records, i, a) for a in actions),
                     cost(Action.REFINE, i), cost(Action.RESAMPLE, i) if Action.RESAMPLE in called else None)
            for i in range(n)]


def _vote_correct(ctx: Context, recs: Sequence[AgentRecord], key: str | None) -> bool:
    holder = next((r for r in recs if key is not None and r.key == key), None)
    return holder is not None and score(ctx, holder.text)


Reward = Callable[[Context, AgentRecord, Outcomes, list[AgentRecord], int, int], list[tuple[float, float]]]
"""(ctx, agent i's record before the round, its outcomes, the team's post-round records, i, round) ->
(r_local, r_global) of each action of its set, ACTION_ORDER: an entry of ``rl/rewards.REWARDS``."""


def with_record(team: Sequence[AgentRecord], i: int, rec: AgentRecord) -> list[AgentRecord]:
    """``team`` with agent i's record replaced by ``rec``."""
    return [*team[:i], rec, *team[i + 1 :]]


def reward_pair(ctx: Context, before: AgentRecord, team: Sequence[AgentRecord], i: int) -> tuple[float, float]:
    """(r_local, r_global) of agent i, ``before`` its record before the decision, ``team`` the records scored."""
    ballots = [Ballot(r.key, r.confidence) for r in team]
    r_local = float(score(ctx, team[i].text)) - float(score(ctx, before.text))
    r_global = float(_vote_correct(ctx, team, vote(ballots))) - float(
        _vote_correct(ctx, team, leave_one_out(ballots, i)))
    return r_local, r_global


def rewards_for(ctx: Context, before: AgentRecord, outcomes: Outcomes, others: list[AgentRecord], i: int,
                round_: int) -> list[tuple[float, float]]:
    """The ``round`` reward: (r_local, r_global) of each action of agent i on the vote right after the round
    (``round_`` itself plays no part), the others' post-round records fixed."""
    return [reward_pair(ctx, before, with_record(others, i, rec), i) for rec in outcomes.after]


def decisions_for_round(ctx: Context, records: list[AgentRecord], outcomes: list[Outcomes], round_: int,
                        behaviour: MetaPolicy, joint_actions: int, rng: np.random.Generator,
                        reward: Reward = rewards_for,
                        features: FeatureSet = PAPER) -> tuple[list[Decision], tuple[Action, ...]]:
    """K joint actions from the behaviour policy, each scored counterfactually per agent by ``reward``; the
    decisions record the observation under ``features``."""
    obs = observation(ctx, records, round_)
    own, peers = arrays(obs, features)
    decisions, first = [], None
    for k in range(joint_actions):
        actions, logps = behaviour.decide(obs, rng)
        first = first or actions
        team = [outcomes[i].after[ACTION_ORDER.index(a)] for i, a in enumerate(actions)]
        for i, a in enumerate(actions):
            pairs = reward(ctx, records[i], outcomes[i], team, i, round_)
            taken = ACTION_ORDER.index(a)
            refine, resample = float(outcomes[i].refine_tokens), outcomes[i].resample_tokens
            spent = {Action.REFINE: refine, Action.RESAMPLE: resample}.get(a) or 0.0
            decisions.append(Decision(
                ctx.example.id, k, round_, i, tuple(map(float, own[i])),
                tuple(tuple(map(float, p)) for p in peers[i]),
                a, logps[i], tuple(lo + gl for lo, gl in pairs), pairs[taken][0], pairs[taken][1],
                float(spent), refine, None if resample is None else float(resample)))
    return decisions, first


def collecting(behaviour: MetaPolicy) -> MethodSpec:
    """The spec the engine runs a collection with: the behaviour policy, the critic on, the default stop."""
    return MethodSpec(name="collect", policy=behaviour, confidence=True)


def collect_question(ctx: Context, joint_actions: int, rng: np.random.Generator, reward: Reward = rewards_for,
                     features: FeatureSet = PAPER, actions: tuple[Action, ...] = ACTIONS) -> list[Decision]:
    """All decisions of one question: the engine's round 0 and round loop, with a step that scores every
    action counterfactually (by ``reward``) and then follows the first drawn joint action. The behaviour
    policy is ``ctx.spec.policy`` (a ``collecting`` spec; its stop rule ends the loop as it ends an episode)."""
    behaviour = ctx.spec.policy
    decisions: list[Decision] = []

    def step(c: Context, records: list[AgentRecord], t: int) -> tuple[list[AgentRecord], list[Turn]]:
        outcomes = counterfactuals(c, records, t, actions)
        new, joint = decisions_for_round(c, records, outcomes, t, behaviour, joint_actions, rng, reward, features)
        decisions.extend(new)
        return [outcomes[i].after[ACTION_ORDER.index(a)] for i, a in enumerate(joint)], []

    records, _ = initial_round(ctx)
    run_rounds(ctx, records, step)
    return decisions
