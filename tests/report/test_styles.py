"""report/styles.py: one (colour, marker) per method, the same in every figure, and no pair twice in one figure;
then every figure the project draws, its legend read back from the drawn artists."""

from __future__ import annotations

from pathlib import Path

import pytest

from deliberation import methods
from deliberation.report import compare_plot, plots
from deliberation.report.loading import TrainingPoint, TrainingRun, sampling_label
from deliberation.report.paired import POOLED, Paired
from deliberation.report.styles import FALLBACK_COLOURS, STYLES, figure_styles, method_of
from deliberation.report.tables import Row, Table, TableCell
from scripts import script

LONGEST = max(methods.METHODS, key=len)
EXTRA = ("mpdf [qwen2.5-coder-1.5b-trees]", "mpdf [runs/other/softrankpo/policy.pt]",
         "sft [docs/results/paired/sft.pt]", "best rule: agreement-resample", "agreement-resample t=0.7")
"""Labels the figures draw beside the plain method names: two checkpoints of mpdf, the SFT arm (no method), the
best rule and its method again under its plain name."""
LABELS = (*methods.METHODS, *EXTRA)


def test_every_styled_method_is_registered_and_has_a_colour_of_its_own():
    """Today's methods all have a style; a method registered later draws in a fallback style until it is
    given one (a new method is one registry entry: no test pins the set of styles to the set of methods)."""
    assert set(STYLES) <= set(methods.METHODS)
    assert len(STYLES) >= 20
    assert len({s.colour for s in STYLES.values()}) == len(STYLES)
    assert not {s.colour for s in STYLES.values()} & set(FALLBACK_COLOURS)


def test_a_label_names_its_method_by_its_first_registered_word():
    assert method_of("mpdf [qwen2.5-coder-1.5b-trees]") == "mpdf"
    assert method_of("best rule: agreement-resample") == "agreement-resample"
    assert method_of(sampling_label(6)) == "self-consistency"
    assert method_of("cisc-logprob") == "cisc-logprob" and method_of(LONGEST) == LONGEST
    assert method_of("sft [docs/results/paired/sft.pt]") is None


def test_a_method_keeps_its_style_across_figures_and_no_figure_repeats_a_pair():
    every = figure_styles(LABELS)
    assert len(set(every.values())) == len(LABELS)
    assert figure_styles(["always-concede", "mpdf"]) == {"always-concede": STYLES["always-concede"],
                                                         "mpdf": STYLES["mpdf"]}
    assert every["mpdf"] == STYLES["mpdf"] and every["mpdf [qwen2.5-coder-1.5b-trees]"] != STYLES["mpdf"]
    assert figure_styles(LABELS) == every  # deterministic


def test_unknown_labels_take_new_colours_first_then_new_pairs_and_never_repeat():
    many = figure_styles(f"run-{i}" for i in range(400))
    assert len(set(many.values())) == 400
    first = list(many.values())[: len(FALLBACK_COLOURS)]
    assert len({s.colour for s in first}) == len(FALLBACK_COLOURS)


# --- every figure, read back ----------------------------------------------------------------------------


@pytest.fixture
def drawn(monkeypatch):
    """The figures the plotting functions would save, kept instead of written."""
    figures = []

    def keep(fig, path, name):
        figures.append(fig)
        return plots.PlotOutcome(name, Path(path))

    for module in (plots, compare_plot):
        monkeypatch.setattr(module, "save_figure", keep)
    return figures


def legend_styles(fig) -> dict[str, tuple[str, str]]:
    """Each entry of the legend of the figure's first panel as (colour, marker), read from its drawn key (an
    errorbar's caps, markers "_" and "|", left out)."""
    from matplotlib.colors import to_hex
    from matplotlib.lines import Line2D
    from matplotlib.offsetbox import DrawingArea, HPacker, TextArea

    out, unmarked = {}, ("None", "none", "", " ", "_", "|")
    for entry in fig.axes[0].get_legend().findobj(HPacker):  # the legend's columns, and in them its entries
        parts = entry.get_children()
        if len(parts) == 2 and isinstance(parts[0], DrawingArea) and isinstance(parts[1], TextArea):
            key, text = parts
            marked = [line for line in key.findobj(Line2D) if line.get_marker() not in unmarked]
            out[text.get_text()] = (to_hex(marked[0].get_color()), str(marked[0].get_marker()))
    return out


def assert_distinct(styles: dict[str, tuple[str, str]], labels) -> None:
    """Every label drawn, no two with one (colour, marker) pair, nor (fewer labels than colours) one colour."""
    assert set(styles) == set(labels)
    assert len(set(styles.values())) == len(styles), styles
    assert len({colour for colour, _ in styles.values()}) == len(styles), styles


def cell(accuracy: float, tokens: float) -> TableCell:
    return TableCell(10, round(10 * accuracy), accuracy, (accuracy - 0.1, accuracy + 0.1), tokens, 3.0, 1.0, 1.0, 1)


def test_the_accuracy_figure_gives_every_method_its_own_style(drawn, tmp_path):
    rows = tuple(Row(label, (cell(0.5, 100.0 * (i + 1)),), 0.5, 100.0 * (i + 1), 1) for i, label in enumerate(LABELS))
    plots.accuracy_vs_tokens(Table(("gsm8k/test",), rows, ("m (scripted)",)), tmp_path / "a.png")
    styles = legend_styles(drawn[0])
    assert_distinct(styles, LABELS)
    assert styles["mpdf"] == (STYLES["mpdf"].colour, STYLES["mpdf"].marker)


def paired(label: str, i: int, reference: str = "best rule: agreement-resample") -> Paired:
    return Paired(label, reference, POOLED, 20, 8, 2 + i % 3, 2, 8, 0.5, 0.01 * i, (0.01 * i - 0.1, 0.01 * i + 0.1),
                  1 + 0.1 * i, (0.9, 1.1 + 0.1 * i))


def test_the_paired_figure_gives_every_arm_and_the_sampling_curve_its_own_style(drawn, tmp_path):
    arms = [label for label in LABELS if label != "best rule: agreement-resample"]
    rows = [paired(label, i) for i, label in enumerate(arms)]
    rows += [paired(sampling_label(k), k) for k in range(1, 7)]
    compare_plot.paired_plot(rows, tmp_path / "p.png")
    styles = legend_styles(drawn[0])
    curve = "self-consistency (k = 1..6)"
    assert_distinct(styles, [*map(compare_plot.short_label, arms), curve])
    assert styles["always-concede"][0] != styles["self-consistency"][0]  # the demo drew both red


def test_the_paired_legend_of_many_arms_stays_on_the_canvas_beside_the_panel(drawn, tmp_path):
    """60 arms (a report of every operating point): in one column the legend beside the panel ran off the
    canvas's bottom and right edge; in columns, the figure widened to hold them, it stays whole, clear of the
    panel, and the panel keeps the figure's own width less its axis labels."""
    rows = [paired(f"cisc-logprob [agents={i}, temperature=0.{i}]", i) for i in range(60)]
    compare_plot.paired_plot(rows, tmp_path / "p.png")
    fig = drawn[0]
    fig.draw_without_rendering()
    legend, panel, canvas = fig.axes[0].get_legend().get_window_extent(), fig.axes[0].get_window_extent(), fig.bbox
    assert canvas.x0 <= legend.x0 and legend.x1 <= canvas.x1 and canvas.y0 <= legend.y0 and legend.y1 <= canvas.y1
    assert legend.x0 >= panel.x1 and panel.width > 0.6 * (canvas.width - legend.width)


def test_the_training_figures_give_every_run_and_algorithm_its_own_style(drawn, tmp_path):
    def run(name: str, stage: str, scale: float, steps: int) -> TrainingRun:
        points = tuple(TrainingPoint(stage, s, 1.0 / s, 0.1, 0.5, None, 0.5 + s / 100, None) for s in range(1, steps))
        return TrainingRun(tmp_path / name, name, scale, points)

    runs = [run(f"{algo}-{scale}", algo, scale, 40) for algo in ("softrankpo", "grpo", "reinforce", "rloo")
            for scale in (0.1, 1.0, 10.0)]
    plots.training_curves(runs, tmp_path / "t.png")
    plots.reward_scale_ablation(runs, tmp_path / "r.png")
    curves, ablation = drawn
    assert_distinct(legend_styles(curves), [r.name for r in runs])
    assert_distinct(legend_styles(ablation), ["softrankpo", "grpo", "reinforce", "rloo"])


def test_the_team_size_figure_gives_every_arm_its_own_style(drawn, tmp_path, monkeypatch):
    with script("experiments/policy_trees_settings.py") as settings:
        monkeypatch.setattr(settings, "save_figure", lambda fig, path, name: drawn.append(fig) or
                            plots.PlotOutcome(name, Path(path)))
        rows = [paired(f"{label} @ 5 agents", i, reference=label) for i, label in enumerate(LABELS)]
        settings.plot(rows, ["3 agents", "5 agents"], tmp_path / "s.png")
    assert_distinct(legend_styles(drawn[0]), [compare_plot.short_label(label) for label in LABELS])
