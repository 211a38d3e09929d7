"""``delib report``: report.md, report.csv and the figures from run and training directories."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Sequence

from deliberation.errors import DelibError, make_folder, writable_folder
from deliberation.files import setting_up, write_text_atomic
from deliberation.report.compare_plot import PAIRED_PNG, paired_plot
from deliberation.report.loading import RunResult, discover, load_results, load_training
from deliberation.report.paired import Paired, paired_markdown, paired_table
from deliberation.report.plots import FIGURES, plotting, write_plots
from deliberation.report.tables import Table, shown_path, runs_markdown, table, to_csv, to_markdown
from deliberation.report.training import training_markdown
from deliberation.types import strict_json, to_json


def write_report(paths: Iterable[str | os.PathLike], out_dir: str | os.PathLike,
                 reference: str | None = None, trees: str | None = None) -> list[Path]:
    """Write report.md, report.csv (when there are evaluation runs) and the plots into ``out_dir``; return
    the files written. Without matplotlib the tables are still written and report.md says how to get plots.
    Rows run on the same questions are also compared with ``reference`` (default: the best fixed rule
    present) question by question: report.md's paired section, paired.json (``report/paired.py``) and
    paired.png (``report/compare_plot.py``); with ``trees``, also with self-consistency at each row's token
    budget (``report/equal_tokens.py``).

    DelibError, before anything is written, when a path does not exist, a file in it cannot be read, or
    neither a run nor a training directory is found."""
    paths, out = [Path(p) for p in paths], writable_folder(out_dir, "--out")
    run_dirs, train_dirs = discover(paths)
    if not run_dirs and not train_dirs:
        raise DelibError(f"no run or training directory found under {', '.join(map(str, paths))}; a run "
                         "directory holds summary.json or episodes.jsonl, a training directory metrics.jsonl")
    results, training = load_results(run_dirs, required=not train_dirs), load_training(train_dirs)
    tab = table(results) if results else None
    fixed = paired_table(results, reference) if results else []  # every row against the reference
    equal = _equal_tokens(results, trees, out)
    make_folder(out)
    outcomes = write_plots(tab, results, training, out)
    if fixed and plotting():  # every row against the reference in one figure, the sampling baselines included;
        # without matplotlib the other figures' one install hint covers it
        outcomes.append(paired_plot(fixed, out / PAIRED_PNG, f"paired difference to {fixed[0].reference}"))
    texts = {"report.md": _report_text(tab, results, outcomes, training, fixed, equal)}
    if tab is not None:
        texts["report.csv"] = to_csv(tab)
    if fixed or equal:
        texts["paired.json"] = strict_json([to_json(p) for p in (*fixed, *equal)], indent=2) + "\n"
    for name, text in texts.items():
        write_text_atomic(out / name, text)
    written = [out / name for name in texts] + [o.path for o in outcomes if o.path is not None]
    _remove_stale(out, written)
    return written


OUTPUTS = ("report.md", "report.csv", "paired.json", PAIRED_PNG, *FIGURES)
"""Every file a report may write into its --out."""


def _remove_stale(out: Path, written: Sequence[Path]) -> None:
    """Remove the files of an earlier report into ``out`` that this one did not write (a training figure when
    this report has no training run, a figure matplotlib's absence skipped), so that the folder holds one
    report; files a report never writes are left alone."""
    for name in OUTPUTS:
        if out / name not in written:
            (out / name).unlink(missing_ok=True)


def _equal_tokens(results: Sequence[RunResult], trees: str | None, out: Path) -> list[Paired]:
    """The rows against self-consistency at their token budget: from the self-consistency runs among the
    inputs, and with ``trees`` also from those replayed out of it (``report/equal_tokens.py``)."""
    from deliberation.report.equal_tokens import equal_token_table, replay_self_consistency, sampling_runs

    if trees is None:
        return equal_token_table(results, sampling_runs(results))
    with setting_up(out / "self-consistency-replays") as replays:  # a refusal leaves no folder it made
        rows = equal_token_table(results, sampling_runs([*results, *replay_self_consistency(trees, replays)]))
        if not rows:
            raise DelibError(f"no row of this report ran the questions of {trees} (same benchmark split, seed and "
                             "ids); pass the store its runs were replayed from")
    return rows


def _report_text(tab: Table | None, results: Sequence[RunResult], outcomes: Sequence[Any],
                 training: Sequence[Any], fixed: Sequence[Paired], equal: Sequence[Paired]) -> str:
    """report.md: the table, the paired rows (against the reference, and against self-consistency at equal
    tokens), the figures (or why each was skipped), the runs and the training runs."""
    parts = ["# Deliberation report\n"]
    if tab is not None:
        parts += [f"Models: {', '.join(tab.models)}.\n", to_markdown(tab)]
    if fixed:
        parts += [f"## Paired against {fixed[0].reference}\n", paired_markdown(fixed)]
    if equal:
        parts += ["## Against self-consistency at equal tokens\n", paired_markdown(equal), *_unmet(results, equal)]
    parts.append("## Plots\n")
    parts += [f"![{o.name}]({o.path.name})\n" if o.path else f"- {o.name}: skipped ({o.note})\n" for o in outcomes]
    if results:
        parts += ["## Runs\n", runs_markdown(results)]
    if training:
        parts += ["## Training runs\n", training_markdown(training),
                  "".join(f"- {run.name}: {shown_path(run.path)}\n" for run in training)]
    return "\n".join(parts)


def _unmet(results: Sequence[RunResult], equal: Sequence[Paired]) -> list[str]:
    """report.md's line naming the rows no self-consistency at their budget met (none when every row was)."""
    from deliberation.report.equal_tokens import unmatched

    missing = unmatched(results, equal)
    return [f"Not met by self-consistency at their budget (cheaper there than its fewest samples present, run at "
            f"other settings or on other questions, or with fewer than two sample counts run there): "
            f"{', '.join(missing)}.\n"] if missing else []
