"""Self-consistency at a row's own token budget: the fair "more samples instead of deliberation" alternative.

A method that spends T tokens a question on a benchmark is compared with the majority of k independent
samples of the same model and settings on the same questions, k the largest whose self-consistency spends
at most T there; pooled over benchmarks, each benchmark's questions keep their own k. A row cheaper than
the fewest samples present gets no such comparison, nor does a benchmark with fewer than two sample counts.
That k never spends more than the row, and with an even k a tie goes to the first sample (``engine/consensus``:
k = 2 answers as k = 1, but where the first sample has no answer), so the comparison can also be made at the
next k up (``above``: the fewest samples that spend at least T), the other side of equal tokens.
The self-consistency runs are those among the report's inputs (one run per k: ``delib evaluate --method
self-consistency --agents k``, as the paired experiment's looks and the state-and-actions table write them) and, with
``delib report --trees STORE``, those replayed offline from the store (every k from 1) into the report
folder.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from deliberation.report.loading import RunResult, discover, load_results
from deliberation.report.paired import EQUAL_TOKENS, NEXT_K_UP, POOLED, Outcome, Paired, Question, compare, outcomes
from deliberation.runs.replay import Replay, evaluate
from deliberation.trees.store import open_store

Setting = tuple[str, ...]  # (backend, model, temperature, max_tokens, prompts): what makes samples comparable
Sampling = dict[tuple[str, Setting], dict[int, dict[Question, Outcome]]]  # (column, setting) -> k -> outcomes


def replay_self_consistency(trees: str, out: Path) -> list[RunResult]:
    """Self-consistency at every k the store ``trees`` holds samples for, replayed offline into ``out``."""
    for k in range(1, open_store(trees).manifest.samples + 1):
        evaluate(Replay(trees, ("self-consistency",), agents=k, offline=True), str(out / f"self-consistency-{k}"),
                 progress=False)
    return load_results(discover([out])[0])


def setting(result: RunResult) -> Setting:
    """What a row and the self-consistency it is paired with must share: the same backend and model,
    sampled at the same temperature, length limit and prompts (the number of samples and rounds aside)."""
    engine = dict(result.engine)
    return (result.backend, result.model, *(engine.get(k, "") for k in ("temperature", "max_tokens", "prompts")))


def sampling_runs(results: Sequence[RunResult]) -> Sampling:
    """The self-consistency runs among ``results`` by benchmark column, setting and sample count k (a run
    that records no team size, or no finished question, is left out)."""
    runs: Sampling = defaultdict(lambda: defaultdict(dict))
    for result in (r for r in results if r.method == "self-consistency" and "agents" in dict(r.engine)):
        k = int(dict(result.engine)["agents"])
        for question, outcome in outcomes([result]).get(result.label, {}).items():
            runs[question[0], setting(result)][k][question] = outcome
    return {key: dict(by_k) for key, by_k in runs.items() if len(by_k) > 1}


def budget_k(tokens: float, runs: dict[int, dict[Question, Outcome]], questions: set[Question],
             above: bool = False) -> int | None:
    """The largest k whose self-consistency spends at most ``tokens`` a question on ``questions`` (``above``:
    the smallest k that spends at least as much); None when no k present is on that side (no self-consistency
    at that budget to compare with)."""
    def spent(k: int) -> float:
        return sum(runs[k][q][1] for q in questions) / len(questions)

    if above:
        return next((k for k in sorted(runs) if spent(k) >= tokens), None)
    fitting = [k for k in sorted(runs) if spent(k) <= tokens]
    return fitting[-1] if fitting else None


def equal_token_table(results: Sequence[RunResult], sampling: Sampling) -> list[Paired]:
    """Every row but self-consistency against self-consistency of its own setting at its own budget, per
    benchmark and pooled."""
    rows, settings = [], {r.label: setting(r) for r in results}
    for label, row in sorted(outcomes([r for r in results if r.method != "self-consistency"]).items()):
        rows += at_equal_tokens(label, row, {column: runs for (column, made), runs in sampling.items()
                                             if made == settings[label]})
    return rows


def at_equal_tokens(label: str, row: dict[Question, Outcome], runs: dict[str, dict[int, dict[Question, Outcome]]],
                    above: bool = False) -> list[Paired]:
    """``row`` against self-consistency at its own budget on each benchmark column of ``runs`` (column -> k ->
    outcomes) where some k fits (``above``: at the next k up, where some k spends as much), then pooled over
    those columns (each keeping its own k) when more than one does."""
    pairs = [_at_budget(label, row, column, by_k, above) for column, by_k in sorted(runs.items())]
    pairs = [p for p in pairs if p is not None]
    rows = [paired for paired, _, _ in pairs]
    if len(pairs) > 1:
        mine = {q: o for _, matched, _ in pairs for q, o in matched.items()}
        theirs = {q: o for _, _, matched in pairs for q, o in matched.items()}
        budget = tuple(k for p, _, _ in pairs for k in p.budget or ())
        rows.append(replace(compare(label, NEXT_K_UP if above else EQUAL_TOKENS, POOLED, mine, theirs),
                            budget=budget))
    return rows


def _at_budget(label: str, row: dict[Question, Outcome], column: str, runs: dict[int, dict[Question, Outcome]],
               above: bool) -> tuple[Paired, dict[Question, Outcome], dict[Question, Outcome]] | None:
    """``row`` on ``column`` against self-consistency at its budget there (``above``: at the next k up), with
    both sides' outcomes on the common questions (every k ran them); None when they share no question or no k
    is on that side of the budget."""
    mine = {q: o for q, o in row.items() if q[0] == column}
    common = set(mine).intersection(*runs.values())
    if not common:
        return None
    k = budget_k(sum(mine[q][1] for q in common) / len(common), runs, common, above)
    if k is None:
        return None
    theirs = {q: runs[k][q] for q in common}
    reference = NEXT_K_UP if above else EQUAL_TOKENS
    paired = replace(compare(label, reference, column, mine, theirs), budget=(k,))  # unpaired: row-only questions
    return paired, {q: mine[q] for q in common}, theirs


def unmatched(results: Sequence[RunResult], equal: Sequence[Paired]) -> list[str]:
    """The rows on a benchmark (``label on benchmark/split``) that ``equal_token_table`` paired with no
    self-consistency at their budget, so that a table of ``equal`` is not read as complete."""
    met = {(p.label, p.column) for p in equal}
    return sorted({f"{r.label} on {r.benchmark}/{r.split}" for r in results if r.method != "self-consistency"
                   and (r.label, f"{r.benchmark}/{r.split}") not in met})
