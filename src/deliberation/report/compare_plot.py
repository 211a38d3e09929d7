"""``delib compare``'s figure: each arm's paired difference to the best rule, accuracy against tokens.

One point per arm on the pooled questions (or the only benchmark split): x = tokens per question as a ratio
to the best rule's, y = accuracy difference in points; both with their paired bootstrap 95% intervals
(``report/paired.py``). The best rule sits at (1, 0) by construction; a point above the zero line and left
of x = 1 is better and cheaper. Written as team.png beside team.md.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Sequence

from deliberation.errors import install_hint
from deliberation.report.paired import POOLED, Paired
from deliberation.report.plots import PlotOutcome, error_bar, method_style, new_figure, save_figure

TEAM_PNG = "team.png"


def paired_plot(paired: Sequence[Paired], path: Path) -> PlotOutcome:
    """The arms' paired differences to the reference (see the module docstring)."""
    name = "paired difference to the best rule"
    if importlib.util.find_spec("matplotlib") is None:
        return PlotOutcome(name, None, install_hint("matplotlib", "plot"))
    points = plotted(paired)
    if not points:
        return PlotOutcome(name, None, "no arm paired with the best rule")
    fig, (ax,) = new_figure(1, size=(7.0, 4.6))
    for i, p in enumerate(points):
        xerr = error_bar(p.token_ratio, *p.token_ratio_ci95)
        yerr = error_bar(100 * p.accuracy_diff, *(100 * end for end in p.accuracy_diff_ci95))
        ax.errorbar([p.token_ratio], [100 * p.accuracy_diff], xerr=xerr, yerr=yerr, capsize=3,
                    label=short_label(p.label), **method_style(i))
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.axvline(1, color="grey", linewidth=0.8, linestyle=":")
    ax.set(xlabel="tokens per question, ratio to the reference", ylabel="accuracy difference (points)")
    ax.set_title(f"paired against {points[0].reference}\n(n = {points[0].n}, 95% paired bootstrap)", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    return save_figure(fig, path, name)


def plotted(paired: Sequence[Paired]) -> list[Paired]:
    """The pooled rows when there are any, else every row (a single benchmark split)."""
    pooled = [p for p in paired if p.column == POOLED]
    return pooled or list(paired)


def short_label(label: str) -> str:
    """``mpdf [runs/x/softrankpo/policy.pt]`` -> ``mpdf [softrankpo]``: the checkpoint's folder names the arm."""
    if "[" not in label or not label.endswith("]"):
        return label
    head, ckpt = label[:-1].split("[", 1)
    parts = Path(ckpt).parts
    named = "/".join(parts[-3:-1]) if len(parts) >= 3 and parts[-1].endswith(".pt") else ckpt
    return f"{head}[{named}]"
