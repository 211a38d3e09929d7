"""How well each zero-cost signal tells right answers from wrong ones: AUROC with a question-level interval.

AUROC is the probability that a right response's signal exceeds a wrong one's (ties count one half):
the Mann-Whitney U statistic over the responses where the signal is defined. Responses of one question
are not independent (same question, shared difficulty), so the 95% interval resamples questions, not
responses (percentile bootstrap, seeded). Rows: ``trees/responses.py``; signals: ``engine/signals.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from deliberation.trees.responses import SIGNAL_NAMES, Response

RESAMPLES = 2000


def auroc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """P(score of a right response > score of a wrong one) + half the ties; None without both kinds."""
    s = np.asarray(scores, dtype=np.float64)  # [n]
    y = np.asarray(labels, dtype=bool)  # [n]
    right, wrong = int(y.sum()), int((~y).sum())
    if right == 0 or wrong == 0:
        return None
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), dtype=np.float64)
    ranks[order] = np.arange(1, len(s) + 1)
    for value in np.unique(s):  # tied scores share their mean rank
        tied = s == value
        ranks[tied] = ranks[tied].mean()
    return float((ranks[y].sum() - right * (right + 1) / 2) / (right * wrong))


@dataclass(frozen=True)
class SignalRow:
    """One signal's line of the table."""

    signal: str
    n: int  # responses where it is defined
    right: int  # of them, right
    auroc: float | None
    ci95: tuple[float, float] | None
    mean_right: float | None
    mean_wrong: float | None


def signal_rows(rows: Sequence[Response], seed: int = 0) -> list[SignalRow]:
    """The AUROC table of every signal over ``rows``."""
    return [_row(rows, k, name, seed) for k, name in enumerate(SIGNAL_NAMES)]


def _row(rows: Sequence[Response], k: int, name: str, seed: int) -> SignalRow:
    defined = [r for r in rows if r.signals[k] is not None]
    values = [float(r.signals[k]) for r in defined]  # type: ignore[arg-type]
    labels = [r.correct for r in defined]
    mean = lambda want: (float(np.mean([v for v, c in zip(values, labels) if c is want]))  # noqa: E731
                         if want in labels else None)
    return SignalRow(name, len(defined), sum(labels), auroc(values, labels), _interval(defined, k, seed),
                     mean(True), mean(False))


def _interval(rows: Sequence[Response], k: int, seed: int) -> tuple[float, float] | None:
    """Percentile 95% interval of the AUROC over questions resampled with replacement."""
    by_question: dict[str, list[Response]] = {}
    for r in rows:
        by_question.setdefault(r.example_id, []).append(r)
    groups = list(by_question.values())
    if len(groups) < 2:
        return None
    rng = np.random.default_rng(seed)
    stats = []
    for _ in range(RESAMPLES):
        picked = [r for g in rng.integers(0, len(groups), len(groups)) for r in groups[g]]
        value = auroc([float(r.signals[k]) for r in picked], [r.correct for r in picked])  # type: ignore[arg-type]
        if value is not None:
            stats.append(value)
    return (float(np.percentile(stats, 2.5)), float(np.percentile(stats, 97.5))) if stats else None


def markdown(title: str, table: Sequence[SignalRow]) -> str:
    """The table as markdown."""
    lines = [f"### {title}", "", "| signal | n | right | AUROC | 95% CI (questions resampled) | mean if right | "
             "mean if wrong |", "|---|---:|---:|---:|---|---:|---:|"]
    fmt = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
    for row in table:
        ci = "-" if row.ci95 is None else f"[{row.ci95[0]:.3f}, {row.ci95[1]:.3f}]"
        lines.append(f"| {row.signal} | {row.n} | {row.right} | {fmt(row.auroc)} | {ci} | {fmt(row.mean_right)} | "
                     f"{fmt(row.mean_wrong)} |")
    return "\n".join(lines) + "\n"
