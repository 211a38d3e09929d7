"""Paired comparisons: every row against a reference row on the questions both ran (docs/design.md, section Replay).

Two methods run on the same questions are compared question by question, not by their two accuracies:
the 2x2 table (both right, only this row, only the reference, both wrong), the exact McNemar test on the
discordant pairs (two-sided binomial test of b against b + c at 1/2; McNemar 1947, the exact form as in
Fagerland et al. 2013), and a paired bootstrap (questions resampled with replacement, the same draw for
both rows) for the accuracy difference and the ratio of tokens. A question is (seed, example id): seeds
of one label pair with the reference's same seed. The default reference is the best fixed rule present
(``methods/rules.py``), the strongest simple alternative a learned policy must beat.
"""

from __future__ import annotations

import math
from fractions import Fraction
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from deliberation import methods
from deliberation.errors import DelibError
from deliberation.report.loading import RunResult, read_episodes
from deliberation.outputs.kinds import EPISODES
from deliberation.types import ADDED_LATER

BOOTSTRAP_DRAWS = 10_000  # docs/results/paired/PREREGISTRATION.md fixes 10,000 resamples, seed 0
POOLED = "pooled"
EQUAL_TOKENS = "self-consistency at equal tokens"  # the reference of rows paired at the most samples within budget
NEXT_K_UP = "self-consistency at the next k up"  # ... and of those paired at the fewest samples spending as much
Outcome = tuple[bool, int]  # (correct, tokens) of one question
Question = tuple[str, int, str]  # (benchmark split, seed, example id)


@dataclass(frozen=True)
class Paired:
    """One row against the reference on the questions both ran (``column`` a benchmark split or pooled)."""

    label: str
    reference: str
    column: str
    n: int
    both_right: int
    only_row: int
    only_reference: int
    both_wrong: int
    mcnemar_p: float
    accuracy_diff: float
    accuracy_diff_ci95: tuple[float, float]
    token_ratio: float
    token_ratio_ci95: tuple[float, float]
    unpaired: int = 0
    """Questions either row ran that the other did not (left out of the comparison)."""
    budget: tuple[int, ...] | None = field(default=None, metadata=ADDED_LATER)
    """Rows against self-consistency at their token budget only (``report/equal_tokens.py``): its sample
    count k on ``column``, or on each benchmark (in column order) when pooled."""


def mcnemar_exact(only_row: int, only_reference: int) -> float:
    """Two-sided exact McNemar p: 2 * P(X <= min(b, c)) for X ~ Binomial(b + c, 1/2), capped at 1."""
    n, k = only_row + only_reference, min(only_row, only_reference)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return min(1.0, float(Fraction(2 * tail, 2**n)))  # exact integers: 2.0**n overflows from n = 1024


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment (Holm 1979), in the order given: the i-th smallest p times (m - i + 1),
    made monotone and capped at 1. Controls the family-wise error of the m comparisons."""
    order = sorted(range(len(p_values)), key=p_values.__getitem__)
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def paired_bootstrap(row: np.ndarray, ref: np.ndarray, row_tokens: np.ndarray, ref_tokens: np.ndarray,
                     draws: int = BOOTSTRAP_DRAWS, seed: int = 0) -> tuple[tuple[float, float], tuple[float, float]]:
    """95% percentile intervals of mean(row - ref) and sum(row_tokens) / sum(ref_tokens), resampling the
    questions (n,) with replacement, one index draw shared by both rows."""
    index = np.random.default_rng(seed).integers(0, len(row), size=(draws, len(row)))  # (D, n)
    diffs = row[index].mean(1) - ref[index].mean(1)  # (D,)
    ratios = row_tokens[index].sum(1) / np.maximum(ref_tokens[index].sum(1), 1)  # (D,)
    return _interval(diffs), _interval(ratios)


def _interval(values: np.ndarray) -> tuple[float, float]:
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def compare(label: str, reference: str, column: str, row: dict[Question, Outcome],
            ref: dict[Question, Outcome]) -> Paired:
    """``label`` against ``reference`` on their common questions (a DelibError if they share none)."""
    common = sorted(set(row) & set(ref))
    if not common:
        raise DelibError(f"{label} and {reference} ran no common question on {column}; pairing needs the same "
                         "questions (same benchmark split, seed and example ids)")
    r = np.array([row[q][0] for q in common], dtype=float)  # (n,)
    f = np.array([ref[q][0] for q in common], dtype=float)  # (n,)
    rt = np.array([row[q][1] for q in common], dtype=float)  # (n,)
    ft = np.array([ref[q][1] for q in common], dtype=float)  # (n,)
    b, c = int(((r == 1) & (f == 0)).sum()), int(((r == 0) & (f == 1)).sum())
    diff_ci, ratio_ci = paired_bootstrap(r, f, rt, ft)
    return Paired(label, reference, column, len(common), int(((r == 1) & (f == 1)).sum()), b, c,
                  int(((r == 0) & (f == 0)).sum()), mcnemar_exact(b, c), float(r.mean() - f.mean()), diff_ci,
                  float(rt.sum() / max(ft.sum(), 1)), ratio_ci, len(set(row) ^ set(ref)))


def outcomes(results: Sequence[RunResult]) -> dict[str, dict[Question, Outcome]]:
    """label -> (column, seed, example id) -> (correct, tokens), from every run's episodes."""
    table: dict[str, dict[Question, Outcome]] = defaultdict(dict)
    for result in results:
        column = f"{result.benchmark}/{result.split}"
        for ep in read_episodes(result.path / EPISODES):
            table[result.label][(column, result.seed, ep.example_id)] = (ep.correct,
                                                                         ep.prompt_tokens + ep.completion_tokens)
    return dict(table)


def best_fixed_rule(results: Sequence[RunResult], table: dict[str, dict[Question, Outcome]]) -> str | None:
    """The label of the most accurate fixed-rule run present (pooled over its questions), or None."""
    fixed = {r.label for r in results if r.method in methods.METHODS and methods.get(r.method).fixed_rule}
    accuracy = {label: np.mean([c for c, _ in table[label].values()]) for label in fixed if table.get(label)}
    return max(sorted(accuracy), key=accuracy.__getitem__) if accuracy else None


def paired_table(results: Sequence[RunResult], reference: str | None = None) -> list[Paired]:
    """Every other label against ``reference`` (default: the best fixed rule) per column and pooled."""
    table = outcomes(results)
    reference = best_fixed_rule(results, table) if reference is None else reference  # "" is no row
    if reference is None:
        return []
    if reference not in table:
        raise DelibError(f"--reference {reference!r} is not a row of this report; rows: {', '.join(sorted(table))}")
    rows = []
    for label in sorted(set(table) - {reference}):
        columns = sorted({q[0] for q in table[label]} & {q[0] for q in table[reference]})
        rows += [compare(label, reference, col, _only(table[label], col), _only(table[reference], col))
                 for col in columns]
        if len(columns) > 1:
            rows.append(compare(label, reference, POOLED, table[label], _in(table[reference], columns)))
    return rows


def _only(outcome: dict[Question, Outcome], column: str) -> dict[Question, Outcome]:
    return {q: o for q, o in outcome.items() if q[0] == column}


def _in(outcome: dict[Question, Outcome], columns: Sequence[str]) -> dict[Question, Outcome]:
    return {q: o for q, o in outcome.items() if q[0] in columns}


def diff_points(diff: float, ci: Sequence[float]) -> str:
    """An accuracy difference and its interval in points: ``+4.8 [+0.0, +14.3]`` (every paired table's cell)."""
    return f"{100 * diff:+.1f} [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"


def _line(p: Paired) -> str:
    rlo, rhi = p.token_ratio_ci95
    column = p.column if p.budget is None else f"{p.column}, k={'/'.join(map(str, p.budget))}"
    return (f"| {p.label} | {column} | {p.n} | {p.both_right} | {p.only_row} | {p.only_reference} | "
            f"{p.both_wrong} | {p.mcnemar_p:.3g} | {diff_points(p.accuracy_diff, p.accuracy_diff_ci95)} | "
            f"{p.token_ratio:.2f} [{rlo:.2f}, {rhi:.2f}] |")


def paired_markdown(rows: Sequence[Paired]) -> str:
    """The paired table of report.md."""
    head = ("| row | benchmark | n | both right | only row | only ref | both wrong | McNemar p | "
            "accuracy diff [95% CI] | token ratio [95% CI] |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | "
            "---: | ---: |\n")
    lines = [_line(p) for p in rows]
    unpaired = [f"{p.label} on {p.column}: {p.unpaired}" for p in rows if p.unpaired and p.column != POOLED]
    note = ("\nQuestions one row ran and the other did not are left out (" + "; ".join(unpaired) + ").\n"
            if unpaired else "")
    return head + "\n".join(lines) + "\n" + note
