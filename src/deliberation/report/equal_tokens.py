"""Self-consistency at a row's own token budget: the fair "more samples instead of deliberation" alternative.

A method that spends T tokens a question on a benchmark is compared with the majority of k independent
samples on the same questions, k the largest whose self-consistency spends at most T there (the smallest
present when none does); pooled over benchmarks, each benchmark's questions keep their own k. The
self-consistency runs are those among the report's inputs (one run per k: ``delib evaluate --method
self-consistency --agents k``, as the paired experiment's looks and issue 37's table write them) and, with
``delib report --trees STORE``, those replayed offline from the store into the report folder. A benchmark
with fewer than two sample counts present gets no such row.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from deliberation.report.loading import RunResult, discover, load_results
from deliberation.report.paired import EQUAL_TOKENS, POOLED, Outcome, Paired, Question, compare, outcomes
from deliberation.runs.replay import Replay, evaluate
from deliberation.trees.store import open_store

Sampling = dict[str, dict[int, dict[Question, Outcome]]]  # benchmark column -> k -> outcomes of k samples


def replay_self_consistency(trees: str, out: Path) -> list[RunResult]:
    """Self-consistency at every k the store ``trees`` holds samples for, replayed offline into ``out``."""
    for k in range(1, open_store(trees).manifest["samples"] + 1):
        evaluate(Replay(trees, ("self-consistency",), agents=k, offline=True), str(out / f"self-consistency-{k}"),
                 progress=False)
    return load_results(discover([out])[0])


def sampling_runs(results: Sequence[RunResult]) -> Sampling:
    """The self-consistency runs among ``results`` by benchmark column and sample count k."""
    runs: Sampling = defaultdict(lambda: defaultdict(dict))
    for result in (r for r in results if r.method == "self-consistency"):
        k = int(dict(result.engine)["agents"])
        for question, outcome in outcomes([result])[result.label].items():
            runs[question[0]][k][question] = outcome
    return {column: dict(by_k) for column, by_k in runs.items() if len(by_k) > 1}


def budget_k(tokens: float, runs: dict[int, dict[Question, Outcome]], questions: set[Question]) -> int:
    """The largest k whose self-consistency spends at most ``tokens`` a question on ``questions`` (else the
    smallest k present)."""
    def spent(k: int) -> float:
        return sum(runs[k][q][1] for q in questions) / len(questions)

    fitting = [k for k in sorted(runs) if spent(k) <= tokens]
    return fitting[-1] if fitting else min(runs)


def equal_token_table(results: Sequence[RunResult], sampling: Sampling) -> list[Paired]:
    """Every row but self-consistency against self-consistency at its own budget, per benchmark and pooled."""
    rows = []
    for label, row in sorted(outcomes([r for r in results if r.method != "self-consistency"]).items()):
        pairs = [_at_budget(label, row, column, runs) for column, runs in sorted(sampling.items())]
        pairs = [p for p in pairs if p is not None]
        rows += [paired for paired, _, _ in pairs]
        if len(pairs) > 1:
            mine = {q: o for _, matched, _ in pairs for q, o in matched.items()}
            theirs = {q: o for _, _, matched in pairs for q, o in matched.items()}
            budget = tuple(k for p, _, _ in pairs for k in p.budget or ())
            rows.append(replace(compare(label, EQUAL_TOKENS, POOLED, mine, theirs), budget=budget))
    return rows


def _at_budget(label: str, row: dict[Question, Outcome], column: str, runs: dict[int, dict[Question, Outcome]]
               ) -> tuple[Paired, dict[Question, Outcome], dict[Question, Outcome]] | None:
    """``row`` on ``column`` against self-consistency at its budget there, with both sides' outcomes on
    the common questions (every k ran them); None when they share no question."""
    common = {q for q in row if q[0] == column}.intersection(*runs.values())
    if not common:
        return None
    tokens = sum(row[q][1] for q in common) / len(common)
    k = budget_k(tokens, runs, common)
    mine, theirs = {q: row[q] for q in common}, {q: runs[k][q] for q in common}
    return replace(compare(label, EQUAL_TOKENS, column, mine, theirs), budget=(k,)), mine, theirs
