"""Self-consistency at a row's own token budget, from a tree store's round-0 samples (``delib report --trees``).

A method that spends T tokens a question is compared with the majority of k independent samples, k the
largest the store holds whose self-consistency spends at most T (at least 1): the fair "more samples
instead of deliberation" alternative. Self-consistency at every k <= K is replayed offline from the store
(``delib evaluate``), written under the report folder, and paired with each row on their common questions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from deliberation.errors import DelibError
from deliberation.report.loading import RunResult, read_episodes
from deliberation.report.paired import Outcome, Paired, Question, compare, outcomes
from deliberation.runs.directory import EPISODES
from deliberation.runs.replay import Replay, evaluate
from deliberation.trees.store import open_store

EQUAL_TOKENS = "equal tokens"  # the column of these pairings in report.md and paired.json


def self_consistency_runs(trees: str, out: Path) -> dict[int, dict[Question, Outcome]]:
    """k -> the questions of self-consistency with k samples, replayed offline from ``trees`` into ``out``."""
    store = open_store(trees)
    m = store.manifest
    runs = {}
    for k in range(1, m["samples"] + 1):
        run = out / f"self-consistency-{k}"
        evaluate(Replay(trees, ("self-consistency",), agents=k, offline=True), str(run), progress=False)
        column = f"{m['benchmark']}/{m['split']}"
        runs[k] = {(column, m["seed"], e.example_id): (e.correct, e.prompt_tokens + e.completion_tokens)
                   for e in read_episodes(run / EPISODES)}
    return runs


def budget_k(tokens: float, runs: dict[int, dict[Question, Outcome]], questions: set[Question]) -> int:
    """The largest k whose self-consistency spends at most ``tokens`` a question on ``questions`` (>= 1)."""
    def spent(k: int) -> float:
        return sum(runs[k][q][1] for q in questions) / len(questions)

    fitting = [k for k in sorted(runs) if spent(k) <= tokens]
    return fitting[-1] if fitting else 1


def equal_token_table(results: Sequence[RunResult], trees: str, out: Path) -> list[Paired]:
    """Every row (but self-consistency) against self-consistency at its own token budget."""
    runs = self_consistency_runs(trees, out)
    table = outcomes([r for r in results if r.method != "self-consistency"])
    rows = []
    for label, row in sorted(table.items()):
        common = set(row) & set(runs[1])
        if not common:
            continue
        tokens = sum(row[q][1] for q in common) / len(common)
        k = budget_k(tokens, runs, common)
        rows.append(compare(label, f"self-consistency-{k}", f"{EQUAL_TOKENS}, k={k}", row, runs[k]))
    if not rows:
        raise DelibError(f"no row of this report ran the questions of {trees} (same benchmark split, seed and "
                         "ids); pass the store its runs were replayed from")
    return rows
