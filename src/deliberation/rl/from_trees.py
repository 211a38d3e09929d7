"""Training decisions from a tree store: the rollout collector replayed over recorded outcomes.

``rl/rollouts.collect_question`` runs over a ``TreeBackend``, so every REFINE and critic call of round 1
is served from the store (``delib tree`` recorded them all). The behaviour policy is ``delib collect``'s
default (the agreement rule, epsilon-mixed) with its K joint actions and seeds, so a store and a rollout
collection of the same questions and settings give the same round-1 decisions.

Later rounds need nodes a store does not hold after ``delib tree``: the collector's round-2 REFINE of every
agent (``rounds`` above 1), and the rounds the ``episode`` reward deliberates on after each decision (the
behaviour rule's calls from every counterfactual team; at most 3^N teams a round per question). Offline
(``grow`` False, the default) the first missing node is an error naming the flag that grows them; with
``grow`` the store's own backend (its manifest's backend, options and cache) generates them once and the
store records them, so the next derivation is offline again.
"""

from __future__ import annotations

from pathlib import Path

from deliberation import benchmarks
from deliberation.engine.features import FEATURE_SETS, PAPER
from deliberation.engine.loop import example_rng, make_context
from deliberation.policy.epsilon import EpsilonMixed
from deliberation.policy.rules import AgreementThreshold
from deliberation.rl.collect import CollectSpec
from deliberation.rl.rewards import reward_function
from deliberation.rl.rollouts import collect_question, collecting
from deliberation.trees.store import TreeBackend, built_examples, open_store, recording_backend, store_engine
from deliberation.actions import ACTION_SETS, PAPER_ACTIONS
from deliberation.types import Decision

GROW_HINT = ("rounds after round 1 (--tree-rounds above 1, --reward episode) need nodes `delib tree` does not "
             "build, and a store built by an older version may lack some of round 1 (rerunning its `delib tree` "
             "command completes it): add --grow-trees to the `delib train` command to generate them once with "
             "the store's backend (recorded in the store)")


def decisions_from_trees(path: str | Path, joint_actions: int = CollectSpec.joint_actions,
                         epsilon: float = CollectSpec.epsilon, rounds: int = 1,
                         reward: str = "round", grow: bool = False, components: str = "both",
                         features: str = PAPER.name, actions: str = PAPER_ACTIONS) -> list[Decision]:
    """Every decision of the behaviour policy over the store's built questions, episodes of ``rounds`` rounds,
    rewards by ``reward`` (a key of ``rl/rewards.REWARDS``) weighted by ``components`` (of
    ``REWARD_COMPONENTS``), observations under the feature set ``features`` (engine/features.py), every
    action of the set ``actions`` (``actions.ACTION_SETS``) scored and explored; see the module docstring for
    ``grow``."""
    store = open_store(str(path))
    engine = store_engine(store, rounds)
    bench = benchmarks.get(store.manifest.benchmark)
    examples = built_examples(store, None)
    behaviour = EpsilonMixed(AgreementThreshold(), epsilon, ACTION_SETS[actions])
    scorer = reward_function(reward, components)
    decisions: list[Decision] = []
    backend = (recording_backend(store, store.manifest.cache, GROW_HINT) if grow
               else TreeBackend(store, None, GROW_HINT))  # growing writes the store: its writer lock
    try:
        for ex in examples:
            ctx = make_context(ex, backend, bench, engine, collecting(behaviour))
            decisions += collect_question(ctx, joint_actions, example_rng(engine.seed, ex.id), scorer,
                                          FEATURE_SETS[features], ACTION_SETS[actions])
    finally:
        backend.close()
    return decisions

