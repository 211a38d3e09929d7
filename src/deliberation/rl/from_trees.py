"""Training decisions from a tree store, with no LLM call: the rollout collector replayed offline.

``rl/rollouts.collect_question`` runs over a ``TreeBackend`` with no backend behind it, so every REFINE and
critic call of round 1 is served from the store (``delib tree`` recorded them all). The behaviour policy is
``delib collect``'s default (the agreement rule, epsilon-mixed) with its K samples and seeds, so a store
and a rollout collection of the same questions and settings give the same round-1 decisions. Deeper rounds
need nodes a store grows only when a replay reaches them: ``rounds`` above 1 fails on the first missing
node (build them by replaying a method with those rounds first).
"""

from __future__ import annotations

from pathlib import Path

from deliberation import benchmarks
from deliberation.engine.loop import example_rng, make_context
from deliberation.policy.epsilon import EpsilonMixed
from deliberation.policy.rules import AgreementThreshold
from deliberation.rl.rollouts import collect_question, collecting
from deliberation.trees.store import TreeBackend, built_examples, open_store, store_engine
from deliberation.types import Decision


def decisions_from_trees(path: str | Path, samples: int = 8, epsilon: float = 0.2, rounds: int = 1) -> list[Decision]:
    """Every decision of the behaviour policy over the store's built questions (see the module docstring)."""
    store = open_store(str(path))
    engine = store_engine(store, rounds)
    bench = benchmarks.get(store.manifest["benchmark"])
    examples = built_examples(store, None)
    backend = TreeBackend(store, None, examples)
    behaviour = EpsilonMixed(AgreementThreshold(), epsilon)
    decisions: list[Decision] = []
    for ex in examples:
        ctx = make_context(ex, backend, bench, engine, collecting(behaviour))
        decisions += collect_question(ctx, samples, example_rng(engine.seed, ex.id))
    return decisions
