"""The ``episode`` reward: a decision scored on the answer the team ends with (docs/design.md, section Episode reward).

The ``round`` reward (docs/design.md, section Rewards) scores agent i's round-t action on the vote right after
round t. Here the team's records after round t (the other agents' sampled actions, agent i's counterfactual
action) deliberate on to the last round R, every agent following the behaviour policy without its
exploration (the rule that collected the data: ``EpsilonMixed.base``), the stop rule honoured as in an
episode; then
- r_local  = 1[agent i correct after round R] - 1[agent i correct before round t];
- r_global = 1[vote of all agents correct after R] - 1[vote without agent i correct after R].
At t = R (or when the team stops after round t) it equals the round reward.

The later rounds make LLM calls (the REFINE and critic calls of the agents the rule refines). Over a tree
store they are nodes the store holds only once grown; offline, the first missing one is an error naming
the command that grows them (``rl/from_trees.py``).
"""

from __future__ import annotations

import numpy as np

from deliberation.engine.loop import AgentRecord, Context, act, observation, stops
from deliberation.engine.spec import MetaPolicy
from deliberation.policy.epsilon import EpsilonMixed
from deliberation.rl.rollouts import Outcomes, reward_pair, with_record

CONTINUATION_SEED = 0  # the rules ignore the generator; a learned base policy samples from a fixed stream


def episode_rewards(ctx: Context, before: AgentRecord, outcomes: Outcomes, team: list[AgentRecord], i: int,
                    round_: int) -> list[tuple[float, float]]:
    """(r_local, r_global) of each action of agent i in round ``round_``, measured after the last round."""
    return [reward_pair(ctx, before, finish(ctx, with_record(team, i, rec), round_), i) for rec in outcomes.after]


def finish(ctx: Context, records: list[AgentRecord], round_: int) -> list[AgentRecord]:
    """The records after the last round, from ``records`` after round ``round_``: rounds round_+1 .. R of the
    behaviour rule, stopping where the method's consensus rule stops an episode."""
    policy = continuation(ctx.spec.policy)
    rng = np.random.default_rng(CONTINUATION_SEED)
    for t in range(round_ + 1, ctx.cfg.rounds + 1):
        if stops(ctx, records):
            break
        actions, _ = policy.decide(observation(ctx, records, t), rng)
        records = act(ctx, records, actions, t).records
    return records


def continuation(behaviour: MetaPolicy | None) -> MetaPolicy | None:
    """The policy later rounds follow: the behaviour policy without its epsilon exploration."""
    return behaviour.base if isinstance(behaviour, EpsilonMixed) else behaviour
