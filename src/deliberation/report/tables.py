"""Tables (markdown, CSV) and plots from run directories and training directories.

``report/write.py`` puts it into report.md and report.csv; finding and
loading the directories, and their labels, is ``deliberation.report.loading``. Rows of the table are the runs'
labels. Runs of the same label and benchmark split (e.g. several seeds) are pooled: counts add up, and the
interval counts questions, not answers (``seeds_ci``).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from deliberation.report.loading import RunResult
from deliberation.runs.directory import Summary, wilson_ci


@dataclass(frozen=True)
class TableCell:
    """One (label, benchmark split) of the table, pooled over the runs that share it."""

    n: int
    correct: int
    accuracy: float
    ci95: tuple[float, float]
    tokens_per_question: float
    calls_per_question: float
    seconds_per_question: float  # wall clock
    generation_seconds_per_question: float  # what the requests cost when generated (cached ones too)
    runs: int


@dataclass(frozen=True)
class Row:
    """A method label: one cell per column (None where it was not run) and the average over its cells."""

    label: str
    cells: tuple[TableCell | None, ...]
    mean_accuracy: float
    mean_tokens_per_question: float
    benchmarks: int


@dataclass(frozen=True)
class Table:
    """Rows = method labels, columns = benchmark splits (``gsm8k/test``)."""

    columns: tuple[str, ...]
    rows: tuple[Row, ...]
    models: tuple[str, ...]


# --- the table ----------------------------------------------------------------------------------------


def column_of(result: RunResult) -> str:
    return f"{result.benchmark}/{result.split}"


def model_of(result: RunResult) -> str:
    return f"{result.model} ({result.backend})"


def row_key(result: RunResult, models: Sequence[str]) -> str:
    """The row of a run: its label, plus the model and backend when the runs used several."""
    return result.label if len(models) < 2 else f"{result.label} @ {model_of(result)}"


def table(results: Sequence[RunResult]) -> Table:
    """Pool ``results`` into rows (labels, in first-seen order) x columns (benchmark splits)."""
    models = tuple(dict.fromkeys(model_of(r) for r in results))
    columns = tuple(dict.fromkeys(column_of(r) for r in results))
    groups: dict[str, dict[str, list[Summary]]] = {}
    for r in results:
        groups.setdefault(row_key(r, models), {}).setdefault(column_of(r), []).append(r.summary)
    rows = tuple(_row(label, [pool(by_col[c]) if c in by_col else None for c in columns])
                 for label, by_col in groups.items())
    return Table(columns, rows, models)


def pool(summaries: Sequence[Summary]) -> TableCell:
    """Add up the counts of several runs of the same cell (seeds of one method on the same questions)."""
    n = sum(s.n for s in summaries)
    correct = sum(round(s.accuracy * s.n) for s in summaries)
    tokens = sum(s.prompt_tokens + s.completion_tokens for s in summaries)
    calls, seconds = sum(s.llm_calls for s in summaries), sum(s.wall_seconds for s in summaries)
    generation = sum(s.generation_seconds for s in summaries)
    return TableCell(n, correct, _ratio(correct, n), seeds_ci(correct, n, summaries), _ratio(tokens, n),
                     _ratio(calls, n), _ratio(seconds, n), _ratio(generation, n), len(summaries))


def seeds_ci(correct: int, n: int, summaries: Sequence[Summary]) -> tuple[float, float]:
    """95% interval of pooled seeds, counting questions, not answers: seeds share their questions, so the
    answers are not independent. Wilson at the pooled accuracy with n = one run's question count, which is
    conservative (a question's mean over seeds varies no more than one Bernoulli answer)."""
    questions = max((s.n for s in summaries), default=0)
    return wilson_ci(round(_ratio(correct, n) * questions), questions)


def _ratio(total: float, n: int) -> float:
    return total / n if n else 0.0


def _row(label: str, cells: list[TableCell | None]) -> Row:
    """A row with its macro average over the benchmarks it has (each benchmark weighs the same)."""
    have = [c for c in cells if c is not None]
    return Row(label, tuple(cells), sum(c.accuracy for c in have) / len(have),
               sum(c.tokens_per_question for c in have) / len(have), len(have))


# --- renderers ----------------------------------------------------------------------------------------

METRIC_HEADERS = ("accuracy % [95% CI]", "tokens/q", "calls/q", "LLM s/q")


def to_markdown(tab: Table) -> str:
    """A GitHub markdown table: per benchmark accuracy [Wilson 95% interval] n=, tokens, calls and seconds
    per question; then the average over the benchmarks a method has."""
    header = ["method"] + [f"{c} {h}" for c in tab.columns for h in METRIC_HEADERS]
    header += ["average accuracy %", "average tokens/q"]
    lines = [md_line(header), md_line(["---"] + ["---:"] * (len(header) - 1))]
    lines += [md_line([row.label, *_md_cells(row, len(tab.columns))]) for row in tab.rows]
    return "\n".join(lines) + "\n\n" + TABLE_NOTE + "\n"


TABLE_NOTE = ("n = answers per cell, pooled over the runs (seeds) of that cell. Accuracy intervals are Wilson "
              "95% intervals over the questions (seeds of one question are not independent answers). Tokens "
              "and calls count every request, including those served from the response cache; LLM s/q is the "
              "time the requests took when they were generated (a cached answer counts what it cost the first "
              "time), so methods that share round-0 answers compare fairly; wall-clock "
              "seconds, in which cached answers cost nothing, are in the CSV. Runs with --concurrency N "
              "charge each question the full time of the batches it shared with others, so their seconds "
              "are latencies, not machine time (up to N times it); a replay of a method that draws samples "
              "one after another (adaptive-consistency) charges each draw the batch it was built in, more "
              "than one draw alone would take. The average is the mean over "
              "the benchmarks a method was run on; (k/K) marks a method run on k of the K benchmarks, whose "
              "average is not comparable to the others.")


def md_line(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _md_cells(row: Row, n_columns: int) -> list[str]:
    out: list[str] = []
    for c in row.cells:
        out += ["-"] * 4 if c is None else [
            f"{100 * c.accuracy:.1f} [{100 * c.ci95[0]:.1f}, {100 * c.ci95[1]:.1f}] n={c.n}",
            f"{c.tokens_per_question:.0f}", f"{c.calls_per_question:.2f}", f"{c.generation_seconds_per_question:.1f}"]
    partial = "" if row.benchmarks == n_columns else f" ({row.benchmarks}/{n_columns})"
    return out + [f"{100 * row.mean_accuracy:.1f}{partial}", f"{row.mean_tokens_per_question:.0f}"]


CSV_FIELDS = ("n", "correct", "accuracy", "ci95_low", "ci95_high", "tokens_per_question",
              "calls_per_question", "seconds_per_question", "generation_seconds_per_question", "runs")


def to_csv(tab: Table) -> str:
    """One line per method label; per benchmark split the unrounded numbers (accuracy as a fraction)."""
    header = ["method"] + [f"{c}:{f}" for c in tab.columns for f in CSV_FIELDS]
    header += ["average:accuracy", "average:tokens_per_question", "average:benchmarks"]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in tab.rows:
        values = [v for c in row.cells for v in _csv_cell(c)]
        writer.writerow([row.label, *values, row.mean_accuracy, row.mean_tokens_per_question, row.benchmarks])
    return buffer.getvalue()


def _csv_cell(c: TableCell | None) -> list[Any]:
    if c is None:
        return [""] * len(CSV_FIELDS)
    return [c.n, c.correct, c.accuracy, c.ci95[0], c.ci95[1], c.tokens_per_question, c.calls_per_question,
            c.seconds_per_question, c.generation_seconds_per_question, c.runs]


def runs_markdown(results: Sequence[RunResult]) -> str:
    """Every run directory that went into the table, for tracing a number back to its episodes."""
    lines = [md_line(["run", "label", "benchmark", "seed", "model", "n", "accuracy %", "state"]),
             md_line(["---"] * 5 + ["---:"] * 2 + ["---"])]
    for r in results:
        lines.append(md_line([shown_path(r.path), r.label, column_of(r), str(r.seed), model_of(r),
                               str(r.summary.n), f"{100 * r.summary.accuracy:.1f}",
                               "partial (no summary.json)" if r.partial else "finished"]))
    return "\n".join(lines) + "\n"


def shown_path(path: Path) -> str:
    """A run's path as the report shows it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
