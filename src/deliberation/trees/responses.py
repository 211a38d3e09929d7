"""Every recorded response of a tree store with its correctness and its zero-cost signals
(docs/design.md, section Zero-cost signals).

Replays, offline through the engine's own functions, what ``delib tree`` recorded for each built question:
the round-0 answers of the agents (with their critic calls) and every agent's REFINE at round 1 (with its
critic call), so each response is seen in the team it belongs to (the round-0 team, or the team in which
every agent refined). Each gets the benchmark's verdict and every signal of ``engine/signals.SIGNALS``:
the rows of the signals' AUROC table (``report/signals.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from deliberation import benchmarks
from deliberation.engine.loop import act, initial_round, make_context, score
from deliberation.engine.signals import SIGNALS
from deliberation.engine.spec import MethodSpec
from deliberation.policy.rules import ConstantPolicy
from deliberation.trees.store import TreeBackend, TreeStore, built_examples, store_engine
from deliberation.actions import Action

SIGNAL_NAMES: tuple[str, ...] = tuple(SIGNALS)


@dataclass(frozen=True)
class Response:
    """One recorded response: where it stands, whether it is right, its signals (``SIGNAL_NAMES`` order)."""

    example_id: str
    round: int  # 0: the agent's round-0 answer; 1: its REFINE
    agent: int
    correct: bool
    signals: tuple[float | None, ...]


def responses(store: TreeStore, data_dir: str | None = None, questions: int | None = None) -> list[Response]:
    """The responses of every built question of ``store``, or of its first ``questions`` (offline: a missing
    node is a one-line error)."""
    examples = built_examples(store, data_dir, questions)
    backend = TreeBackend(store, None, "the signals read every agent's round-1 REFINE with its critic call, which "
                                       "a store records with --methods mpdf: rerun its build command with it")
    bench = benchmarks.get(store.manifest.benchmark)
    engine = store_engine(store, rounds=1)
    spec = MethodSpec("signals", ConstantPolicy(Action.REFINE), confidence=True)
    rows: list[Response] = []
    for example in examples:
        ctx = make_context(example, backend, bench, engine, spec)
        records, _ = initial_round(ctx)
        refined = act(ctx, records, [Action.REFINE] * len(records), 1).records
        for round_, team in ((0, records), (1, refined)):
            views = [r.view() for r in team]
            rows += [Response(example.id, round_, i, score(ctx, r.text),
                              tuple(SIGNALS[name](views, i) for name in SIGNAL_NAMES)) for i, r in enumerate(team)]
    return rows
