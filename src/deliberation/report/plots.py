"""The report's figures (PNG, matplotlib's Agg canvas, no pyplot global state).

Each figure is one small function ``(inputs, path) -> PlotOutcome`` that draws nothing and says why when its
inputs are absent (no meta-actions, no training directory, a single reward scale). Run and training
directories are read by ``report/loading.py``.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from deliberation.errors import DelibError, install_hint, write_error
from deliberation.rl.algorithms import is_supervised
from deliberation.actions import ACTION_ORDER

from deliberation.report.loading import RunResult, TrainingPoint, TrainingRun
from deliberation.report.styles import figure_styles

if TYPE_CHECKING:
    from deliberation.report.tables import Table

AXIS_LABELS_IN = 1.25
"""Inches a panel needs beside its plotting area for the y axis's label and tick labels."""
ACTION_COLOURS = ("#4C72B0", "#DD8452", "#55A868", "#8172B3")  # persist, refine, concede, resample
CURVES = (("loss", "loss"), ("val_accuracy", "held-out accuracy (greedy earns the best reward)"),
          ("kl", "KL(pi || pi_ref)"), ("entropy", "policy entropy"))


@dataclass(frozen=True)
class PlotOutcome:
    """A figure written to ``path``, or skipped (path None) for the reason in ``note``."""

    name: str
    path: Path | None
    note: str = ""


def plotting() -> bool:
    """Whether matplotlib (the ``plot`` extra) is installed; without it figures are skipped with its install hint."""
    return importlib.util.find_spec("matplotlib") is not None


FIGURES = ("accuracy_vs_tokens.png", "actions_per_round.png", "training_curves.png", "training_actions.png",
           "reward_scale_ablation.png")
"""The report's figures, in ``write_plots``' order: the files it may write."""


def write_plots(tab: "Table | None", results: Sequence[RunResult], training: Sequence[TrainingRun],
                out: Path) -> list[PlotOutcome]:
    """Every figure of the report, into ``out`` (none, with the install hint, when matplotlib is absent)."""
    if not plotting():
        return [PlotOutcome("plots", None, install_hint("matplotlib", "plot"))]
    accuracy, actions, curves, chosen, scales = (out / name for name in FIGURES)
    return [accuracy_vs_tokens(tab, accuracy), action_distribution(results, actions), training_curves(training, curves),
            training_actions(training, chosen), reward_scale_ablation(training, scales)]


# --- figures --------------------------------------------------------------------------------------------


def accuracy_vs_tokens(tab: "Table | None", path: Path) -> PlotOutcome:
    """Accuracy (with its 95% interval) against tokens per question: one panel per benchmark, a point per
    method; up and to the left is better."""
    name = "accuracy vs tokens per question"
    if tab is None or not tab.rows:
        return PlotOutcome(name, None, "no evaluation run")
    fig, axes = new_figure(len(tab.columns), size=(6.4, 4.8))
    handles, styles = {}, figure_styles(row.label for row in tab.rows)
    for j, (ax, column) in enumerate(zip(axes, tab.columns)):
        for row in tab.rows:
            cell = row.cells[j]
            if cell is not None:
                acc, lo, hi = (100 * x for x in (cell.accuracy, *cell.ci95))
                handles[row.label] = ax.errorbar(cell.tokens_per_question, acc, yerr=error_bar(acc, lo, hi),
                                                 **styles[row.label].errorbar(), capsize=3, elinewidth=0.8)
        ax.set(title=column, xlabel="tokens per question", ylabel="accuracy % (95% CI)")
    legend_above_points(axes[0], handles)
    return save_figure(fig, path, name)


def action_distribution(results: Sequence[RunResult], path: Path) -> PlotOutcome:
    """Share of each meta-action (persist, refine, concede, resample) per deliberation round, one panel per
    method label (pooled over benchmarks and seeds); one legend names every action any panel drew."""
    name = "meta-actions per round"
    counts = _actions_by_label(results)
    if not counts:
        return PlotOutcome(name, None, "no run took meta-actions (rounds 1..R)")
    fig, axes = new_figure(len(counts))
    for ax, (label, per_round) in zip(axes, counts.items()):
        totals = [max(1, sum(c)) for c in per_round]
        bottom = [0.0] * len(per_round)
        rounds = list(range(1, len(per_round) + 1))
        for k, action in enumerate(ACTION_ORDER[: len(per_round[0])]):
            shares = [c[k] / t for c, t in zip(per_round, totals)]
            ax.bar(rounds, shares, bottom=bottom, color=ACTION_COLOURS[k], label=action.value)
            bottom = [b + s for b, s in zip(bottom, shares)]
        ax.set(title=label, xlabel="round (decisions)", ylabel="share of agent decisions", ylim=(0, 1))
        ax.set_xticks(rounds, [f"{r}\n({sum(c)})" for r, c in zip(rounds, per_round)])
    legend_of_all(axes[0], axes)
    return save_figure(fig, path, name)


def legend_of_all(target: Any, axes: Sequence[Any]) -> None:
    """One legend in ``target`` with every entry any of ``axes`` drew, in first-drawn order: the first panel
    may lack an entry a later one has (a constant rule without RESAMPLE before a rule that resamples)."""
    entries: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    target.legend(list(entries.values()), list(entries), fontsize=7)


def _actions_by_label(results: Sequence[RunResult]) -> dict[str, list[list[int]]]:
    """Label -> per-round action counts, summed over its runs; labels without actions left out."""
    out: dict[str, list[list[int]]] = {}
    for r in (r for r in results if r.actions_by_round):
        rows = out.setdefault(r.label, [])
        width = max(len(r.actions_by_round[0]), len(rows[0]) if rows else 0)
        rows[:] = [row + [0] * (width - len(row)) for row in rows]
        rows += [[0] * width for _ in range(len(r.actions_by_round) - len(rows))]
        for i, counts in enumerate(r.actions_by_round):
            rows[i] = [a + b for a, b in itertools.zip_longest(rows[i], counts, fillvalue=0)]
    return {label: rows for label, rows in out.items() if any(map(sum, rows))}


def training_curves(runs: Sequence[TrainingRun], path: Path) -> PlotOutcome:
    """Loss, held-out accuracy, KL and entropy against the optimizer step, a line per run and stage."""
    name = "training curves"
    if not any(r.points for r in runs):
        return PlotOutcome(name, None, "no training directory (metrics.jsonl) given")
    fig, axes = new_figure(len(CURVES), columns=2)
    styles = figure_styles(run.name for run in runs)
    for ax, (field, title) in zip(axes, CURVES):
        for run in runs:
            for j, (stage, xs, ys) in enumerate(_series(run, lambda p, f=field: getattr(p, f))):
                ax.plot(xs, ys, label=None if j else run.name, **_line_style(stage, xs, styles[run.name].line()))
        ax.set(title=title, xlabel="optimizer step (stages in sequence; dashed: sft)")
    legend_of_all(axes[0], axes)
    return save_figure(fig, path, name)


def training_actions(runs: Sequence[TrainingRun], path: Path) -> PlotOutcome:
    """The greedy policy's action shares on held-out decisions over training, one panel per run."""
    name = "action distribution over training"
    runs = [r for r in runs if any(p.val_actions for p in r.points)]
    if not runs:
        return PlotOutcome(name, None, "no training run recorded held-out action shares (val_actions)")
    fig, axes = new_figure(len(runs))
    for ax, run in zip(axes, runs):
        width = max(len(p.val_actions) for p in run.points if p.val_actions)
        for k, action in enumerate(ACTION_ORDER[:width]):
            for j, (stage, xs, ys) in enumerate(_series(run, _held_out_share(k))):
                ax.plot(xs, ys, label=None if j else action.value,
                        **_line_style(stage, xs, {"color": ACTION_COLOURS[k], "marker": "o"}))
        ax.set(title=run.name, xlabel="optimizer step (dashed: sft)", ylabel="share of held-out decisions",
               ylim=(0, 1))
        ax.legend(fontsize=7)
    return save_figure(fig, path, name)


def reward_scale_ablation(runs: Sequence[TrainingRun], path: Path) -> PlotOutcome:
    """Final held-out accuracy against reward_scale, a line per policy-gradient algorithm (robustness
    ablation: rank-based SoftRankPO should be flat, scale-sensitive advantages should not)."""
    name = "reward-scale ablation"
    points = [r for r in runs if r.reward_scale is not None and r.final_stage and not is_supervised(r.final_stage)
              and r.final_val_accuracy is not None]
    if len({r.reward_scale for r in points}) < 2:
        return PlotOutcome(name, None, "needs policy-gradient runs at two or more reward_scale values")
    fig, (ax,) = new_figure(1)
    styles = figure_styles(r.final_stage for r in points)
    for algo, style in styles.items():
        line = sorted((r.reward_scale, 100 * r.final_val_accuracy) for r in points if r.final_stage == algo)
        ax.plot([x for x, _ in line], [y for _, y in line], **style.line(), label=algo)
    ax.set(xscale="log", xlabel="reward scale", ylabel="final held-out accuracy %")
    ax.legend(fontsize=8)
    return save_figure(fig, path, name)


# --- helpers --------------------------------------------------------------------------------------------


def _held_out_share(k: int) -> Callable[[TrainingPoint], float | None]:
    """A training point's held-out share of action ``k`` (None where no held-out set was kept)."""
    return lambda p: p.val_actions[k] if p.val_actions else None


def _series(run: TrainingRun,
            value: Callable[[TrainingPoint], float | None]) -> list[tuple[str, list[int], list[float]]]:
    """(stage, x, y) per stage of a run; x counts steps across stages so SFT and fine-tuning line up in
    sequence; points whose value is None (no held-out set) are left out."""
    series: dict[str, tuple[list[int], list[float]]] = {}
    for x, point in enumerate(run.points, start=1):
        y = value(point)
        if y is not None:
            xs, ys = series.setdefault(point.stage, ([], []))
            xs.append(x)
            ys.append(float(y))
    return [(stage, xs, ys) for stage, (xs, ys) in series.items()]


def legend_above_points(ax: Any, handles: dict[str, Any], rows: int = 6) -> None:
    """The legend inside ``ax``, in its upper left corner, with the y axis raised just enough that it covers
    no point or interval: the data keep the lower part of the panel, the legend the upper. At most ``rows``
    rows (more labels, more columns), so the legend stays short. Ticks above 100% are dropped: accuracy
    never reaches them, the room is only the legend's."""
    legend = ax.legend(list(handles.values()), list(handles), loc="upper left", fontsize=7, framealpha=0.9,
                       ncols=math.ceil(len(handles) / rows))
    _widen_to_hold(ax, legend)
    ax.get_figure().draw_without_rendering()  # lays the figure out, so both heights are the saved ones
    share = min(0.6, legend.get_window_extent().height / ax.get_window_extent().height)
    lo, hi = ax.get_ylim()
    ax.set_yticks([t for t in ax.get_yticks() if lo <= t <= min(hi, 100)])
    ax.set_ylim(lo, hi + (hi - lo) * share / (1 - share))


def _widen_to_hold(ax: Any, legend: Any) -> None:
    """Widens the figure, where needed, until every panel of its row is as wide as ``legend`` and the axis
    labels beside it: a legend wider than its panel (many methods, long labels) collapsed the constrained
    layout, squeezing the points into a sliver under a legend cut off at the edge."""
    fig = ax.get_figure()
    need = legend.get_window_extent(fig.canvas.get_renderer()).width / fig.dpi + AXIS_LABELS_IN
    columns = ax.get_subplotspec().get_gridspec().ncols
    fig.set_figwidth(max(fig.get_figwidth(), columns * need))


def error_bar(value: float, low: float, high: float) -> list[list[float]]:
    """matplotlib's [[below], [above]] for an interval around ``value``; an end past the value by rounding
    (a Wilson interval at 0% or 100%, a bootstrap interval of a skewed difference) draws no arm instead of
    failing the figure."""
    return [[max(value - low, 0.0)], [max(high - value, 0.0)]]


def _line_style(stage: str, xs: Sequence[int], style: dict[str, Any]) -> dict[str, Any]:
    """``style`` (colour and marker) dashed for the SFT stage, with about 15 markers a line: every point of a
    short series (a one-step stage still shows), spaced out on a long one."""
    return {**style, "linestyle": "--" if is_supervised(stage) else "-", "markevery": max(1, len(xs) // 15),
            "markersize": 3}


def new_figure(panels: int, columns: int = 3, size: tuple[float, float] = (4.2, 3.4)) -> tuple[Any, list[Any]]:
    """A figure on an Agg canvas with ``panels`` axes in a grid of at most ``columns`` columns."""
    figure_cls, canvas_cls = _matplotlib()
    cols = min(panels, columns)
    rows = math.ceil(panels / cols)
    fig = figure_cls(figsize=(size[0] * cols, size[1] * rows), layout="constrained")
    canvas_cls(fig)
    return fig, [fig.add_subplot(rows, cols, i + 1) for i in range(panels)]


def _matplotlib() -> tuple[type, type]:
    """matplotlib's Figure and Agg canvas (lazy: plotting is an optional extra)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:
        raise DelibError(install_hint("matplotlib", "plot")) from err
    return Figure, FigureCanvasAgg


def save_figure(fig: Any, path: Path, name: str) -> PlotOutcome:
    """Write ``fig`` as the PNG ``path``; a write the file system refuses is a DelibError naming the cause."""
    try:
        fig.savefig(path, dpi=120)
    except OSError as err:
        raise write_error(err, path) from err
    return PlotOutcome(name, path)
