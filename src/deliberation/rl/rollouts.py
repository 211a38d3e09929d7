"""Rollout collection: episodes under a behaviour policy with the counterfactual outcome of every action.

At each decision point (round t, every agent i) the three outcomes are known at the cost of one REFINE
call per agent (one batch; cached): PERSIST keeps the answer, CONCEDE adopts the peer chosen by the
engine's rule, REFINE is the refined answer. K joint actions are then drawn from the behaviour policy and
scored without further calls, giving each agent K decisions (its group for ranking) whose rewards are
(DESIGN.md section 1):
- r_local  = 1[agent i correct after the round] - 1[agent i correct before];
- r_global = 1[vote of all agents correct] - 1[vote without agent i correct] (leave-one-out);
recorded for each of the three actions given the other agents' sampled actions. The trajectory then
continues with the first sample's joint action.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from deliberation.deliberation.consensus import Ballot, leave_one_out, unanimous, vote
from deliberation.deliberation.engine import (AgentRecord, Context, MetaPolicy, apply_actions, concede_target,
                                              initial_round, score_confidence)
from deliberation.deliberation.state import observe
from deliberation.types import ACTIONS, Action, Decision


@dataclass(frozen=True)
class Outcomes:
    """Agent i's record after each action (ACTIONS order) and what REFINE cost in tokens."""

    after: tuple[AgentRecord, AgentRecord, AgentRecord]
    refine_tokens: int


@dataclass(frozen=True)
class EpsilonMixed:
    """A behaviour policy: the base policy's action, replaced by a uniform one with probability epsilon.
    Log-probs are those of the mixture, as importance ratios need."""

    base: MetaPolicy
    epsilon: float = 0.2

    def decide(self, obs, rng: np.random.Generator) -> tuple[tuple[Action, ...], tuple[float, ...]]:
        base, _ = self.base.decide(obs, rng)
        actions = tuple(ACTIONS[rng.integers(3)] if rng.random() < self.epsilon else a for a in base)
        probs = [(1 - self.epsilon) * (a == b) + self.epsilon / 3 for a, b in zip(actions, base)]
        return actions, tuple(float(np.log(p)) for p in probs)


def counterfactuals(ctx: Context, records: list[AgentRecord], round_: int) -> list[Outcomes]:
    """Every agent's outcome under each action: one REFINE batch, one critic batch, no other calls."""
    refined, spent = apply_actions(ctx, records, [Action.REFINE] * len(records), round_)
    scored, critics = score_confidence(ctx, [replace(r, changed=True) for r in refined])
    refined = [replace(s, changed=r.changed) for s, r in zip(scored, refined)]
    out = []
    for i, rec in enumerate(records):
        target = concede_target(records, i)
        conceded = replace(records[target], changed=True) if target is not None else replace(rec, changed=False)
        cost = sum(c.prompt_tokens + c.completion_tokens for c in [*spent[i], critics[i]] if c is not None)
        out.append(Outcomes((replace(rec, changed=False), refined[i], conceded), cost))
    return out


def _correct(ctx: Context, rec: AgentRecord) -> bool:
    if rec.text not in ctx.memo:
        ctx.memo[rec.text] = ctx.bench.score(ctx.example, rec.text)
    return ctx.memo[rec.text]


def _vote_correct(ctx: Context, recs: Sequence[AgentRecord], key: str | None) -> bool:
    holder = next((r for r in recs if key is not None and r.key == key), None)
    return holder is not None and _correct(ctx, holder)


def rewards_for(ctx: Context, before: AgentRecord, outcomes: Outcomes, others: list[AgentRecord],
                i: int) -> list[tuple[float, float]]:
    """(r_local, r_global) of each action of agent i, the others' post-round records fixed."""
    result = []
    for rec in outcomes.after:
        team = others[:i] + [rec] + others[i + 1 :]
        ballots = [Ballot(r.key, r.confidence) for r in team]
        r_local = float(_correct(ctx, rec)) - float(_correct(ctx, before))
        r_global = float(_vote_correct(ctx, team, vote(ballots))) - float(
            _vote_correct(ctx, team, leave_one_out(ballots, i)))
        result.append((r_local, r_global))
    return result


def decisions_for_round(ctx: Context, records: list[AgentRecord], outcomes: list[Outcomes], round_: int,
                        behaviour: MetaPolicy, samples: int,
                        rng: np.random.Generator) -> tuple[list[Decision], tuple[Action, ...]]:
    """K joint actions from the behaviour policy, each scored counterfactually per agent."""
    obs = observe([r.view() for r in records], round_, ctx.cfg.rounds)
    decisions, first = [], None
    for k in range(samples):
        actions, logps = behaviour.decide(obs, rng)
        first = first or actions
        team = [outcomes[i].after[ACTIONS.index(a)] for i, a in enumerate(actions)]
        for i, a in enumerate(actions):
            pairs = rewards_for(ctx, records[i], outcomes[i], team, i)
            taken = ACTIONS.index(a)
            decisions.append(Decision(
                ctx.example.id, k, round_, i, tuple(map(float, obs.own[i])),
                tuple(tuple(map(float, p)) for p in obs.peers[i]),
                a, logps[i], tuple(lo + gl for lo, gl in pairs), pairs[taken][0], pairs[taken][1],
                float(outcomes[i].refine_tokens if a is Action.REFINE else 0)))
    return decisions, first


def collect_question(ctx: Context, behaviour: MetaPolicy, samples: int, rng: np.random.Generator) -> list[Decision]:
    """All decisions of one question: round 0, then R rounds of counterfactual scoring."""
    records, _ = initial_round(ctx)
    decisions: list[Decision] = []
    for t in range(1, ctx.cfg.rounds + 1):
        if ctx.cfg.early_stop and unanimous([r.key for r in records]):
            break
        outcomes = counterfactuals(ctx, records, t)
        new, actions = decisions_for_round(ctx, records, outcomes, t, behaviour, samples, rng)
        decisions += new
        records = [outcomes[i].after[ACTIONS.index(a)] for i, a in enumerate(actions)]
    return decisions
