"""The paired figure: each arm's paired difference to the reference, accuracy against tokens.

One point per arm on the pooled questions (or the only benchmark split): x = tokens per question as a ratio
to the reference's, y = accuracy difference in points; both with their paired bootstrap 95% intervals
(``report/paired.py``). The reference sits at (1, 0) by construction; a point above the zero line and left
of x = 1 is better and cheaper. ``delib compare`` writes it as team.png beside team.md (reference: the best
rule); ``delib report`` as paired.png beside paired.json, with every row it pairs (self-consistency,
adaptive sampling and CISC included, so the strongest simple alternatives sit in the same figure).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

from deliberation.errors import install_hint
from deliberation.report.loading import sampling_k
from deliberation.report.paired import POOLED, Paired
from deliberation.report.plots import PlotOutcome, error_bar, new_figure, plotting, save_figure
from deliberation.report.styles import Style, figure_styles
from deliberation.rl.config import CHECKPOINT_NAME

TEAM_PNG, PAIRED_PNG = "team.png", "paired.png"


def paired_plot(paired: Sequence[Paired], path: Path,
                name: str = "paired difference to the best rule") -> PlotOutcome:
    """The arms' paired differences to the reference (see the module docstring); ``name`` titles the figure
    in the markdown that links it."""
    if not plotting():
        return PlotOutcome(name, None, install_hint("matplotlib", "plot"))
    points = plotted(paired)
    if not points:
        return PlotOutcome(name, None, "no row paired with the reference")
    curve, arms = sampling_curve(points)
    styles = figure_styles([*(short_label(p.label) for p in arms), *([_curve_label(curve)] if curve else [])])
    fig, (ax,) = new_figure(1, size=(7.0, 4.6))
    for p in arms:
        _point(ax, p, label=short_label(p.label), **styles[short_label(p.label)].errorbar())
    if curve:
        _curve(ax, curve, styles[_curve_label(curve)])
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.axvline(1, color="grey", linewidth=0.8, linestyle=":")
    ax.set(xlabel="tokens per question, ratio to the reference", ylabel="accuracy difference (points)")
    ax.set_title(f"paired against {points[0].reference}\n(n = {points[0].n}, 95% paired bootstrap)", fontsize=9)
    legend_beside(ax)
    return save_figure(fig, path, name)


LEGEND_ENTRY_PT = 7 * 2.1
"""The height a legend entry takes at font size 7 (its text and the space between entries), in points."""


def legend_beside(ax: Any) -> None:
    """The legend right of the panel (outside it: with many arms, no point hidden), in as many columns as keep it
    within the panel's height, the figure widened by the legend's width: in one column the legend of a report of
    every operating point (60 arms) ran off the bottom and the right edge of the canvas."""
    fig = ax.get_figure()
    rows = max(1, int(fig.get_figheight() * 72 / LEGEND_ENTRY_PT))  # 22 in the paired figure's 4.6 inches
    columns = math.ceil(len(ax.get_legend_handles_labels()[0]) / rows)
    legend = ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), ncols=columns)
    fig.set_figwidth(fig.get_figwidth() + legend.get_window_extent(fig.canvas.get_renderer()).width / fig.dpi)


def _point(ax: Any, p: Paired, **style: Any) -> None:
    """One row at (token ratio, accuracy difference) with both paired intervals as error bars."""
    xerr = error_bar(p.token_ratio, *p.token_ratio_ci95)
    yerr = error_bar(100 * p.accuracy_diff, *(100 * end for end in p.accuracy_diff_ci95))
    ax.errorbar([p.token_ratio], [100 * p.accuracy_diff], xerr=xerr, yerr=yerr, capsize=3, **style)


def _curve(ax: Any, curve: Sequence[tuple[int, Paired]], style: Style) -> None:
    """Self-consistency's rows joined in k order, each labelled with its k, one legend entry for all, in
    ``style``; when the reference is self-consistency itself, its k joins the line at (1, 0)."""
    line = _curve_line(curve)
    for i, (k, p) in enumerate(curve):
        _point(ax, p, label=None if i else _curve_label(curve), **style.errorbar(), markersize=3)
    for k, x, y in line:
        ax.annotate(f"k={k}", (x, y), textcoords="offset points", xytext=(4, -9), fontsize=6, color=style.colour)
    ax.plot([x for _, x, _ in line], [y for _, _, y in line], color=style.colour, linewidth=0.8)


def _curve_line(curve: Sequence[tuple[int, Paired]]) -> list[tuple[int, float, float]]:
    """(k, token ratio, difference in points) of the curve's points in k order, the reference's own k at
    (1, 0) when it is self-consistency."""
    reference_k = sampling_k(curve[0][1].reference)
    return sorted([(k, p.token_ratio, 100 * p.accuracy_diff) for k, p in curve] +
                  ([(reference_k, 1.0, 0.0)] if reference_k is not None else []))


def _curve_label(curve: Sequence[tuple[int, Paired]]) -> str:
    """The curve's one legend entry, naming the k it spans."""
    line = _curve_line(curve)
    return f"self-consistency (k = {line[0][0]}..{line[-1][0]})"


def sampling_curve(points: Sequence[Paired]) -> tuple[list[tuple[int, Paired]], list[Paired]]:
    """Plain self-consistency at each sample count k (``loading.sampling_label``) as (k, row) in k order,
    drawn as one curve; and every other row. Fewer than two such rows make no curve: they stay rows of their
    own."""
    keyed = [(sampling_k(p.label), p) for p in points]
    found = sorted(((k, p) for k, p in keyed if k is not None), key=lambda kp: kp[0])
    if len(found) < 2:
        return [], list(points)
    return found, [p for k, p in keyed if k is None]


def plotted(paired: Sequence[Paired]) -> list[Paired]:
    """The pooled rows when there are any, else every row (a single benchmark split)."""
    pooled = [p for p in paired if p.column == POOLED]
    return pooled or list(paired)


def short_label(label: str) -> str:
    """A checkpoint's arm named by its last folders: ``mpdf [runs/x/softrankpo/policy.pt]`` -> ``mpdf
    [x/softrankpo]`` (a training run's own file name, ``CHECKPOINT_NAME``, says nothing), ``sft
    [docs/results/paired/sft.pt]`` -> ``sft [paired/sft]`` (any other file name does). Other labels as they
    are."""
    if "[" not in label or not label.endswith("]"):
        return label
    head, ckpt = label[:-1].split("[", 1)
    path = Path(ckpt)
    if path.suffix != ".pt":
        return label
    kept = path.parts[-3:-1] if path.name == CHECKPOINT_NAME else (*path.parts[-2:-1], path.stem)
    return f"{head}[{'/'.join(kept) or ckpt}]"
