"""Report: tables equal the run summaries, pooling and averages, plots written, training plots, bad input."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import shutil
import warnings
from dataclasses import replace
from pathlib import Path

import pytest

from deliberation.report import loading as run_results, plots, tables, write as report
from deliberation.report.styles import figure_styles
from deliberation.benchmarks.answers import make_backend
from deliberation.config import EngineConfig
from deliberation.errors import DelibError
from deliberation.runs.runner import RunSpec, execute
from deliberation.runs.directory import Summary, summarize, wilson_ci
from deliberation.types import to_json

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
LIMIT = 3


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """self-consistency and debate on 3 GSM8K questions (scripted backend), as run directories."""
    root = tmp_path_factory.mktemp("runs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DELIB_DATA_DIR", os.environ.get("DELIB_DATA_DIR") or str(DATA))
        backend = make_backend("scripted", benchmark="gsm8k")
        for method in ("self-consistency", "debate"):
            spec = RunSpec(method=method, benchmark="gsm8k", limit=LIMIT, backend="scripted")
            execute(spec, str(root / method), progress=False, backend=backend)
    return root


def summary_of(path: Path) -> Summary:
    return run_results.load_run(path).summary


def csv_rows(text: str) -> dict[str, dict[str, str]]:
    return {row["method"]: row for row in csv.DictReader(io.StringIO(text))}


def test_markdown_and_csv_equal_the_summaries(runs):
    tab = tables.table(run_results.load_runs([runs]))
    assert tab.columns == ("gsm8k/test",) and {r.label for r in tab.rows} == {"self-consistency", "debate"}
    markdown, rows = tables.to_markdown(tab), csv_rows(tables.to_csv(tab))
    for method in ("self-consistency", "debate"):
        s = json.loads((runs / method / "summary.json").read_text())
        lo, hi = s["accuracy_ci95"]
        assert f"| {method} | {100 * s['accuracy']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}] n={LIMIT} |" in markdown
        row = rows[method]
        assert float(row["gsm8k/test:accuracy"]) == s["accuracy"] and int(row["gsm8k/test:n"]) == s["n"] == LIMIT
        assert (float(row["gsm8k/test:ci95_low"]), float(row["gsm8k/test:ci95_high"])) == (lo, hi)
        assert float(row["gsm8k/test:tokens_per_question"]) == pytest.approx(s["tokens_per_question"])
        assert float(row["gsm8k/test:calls_per_question"]) == pytest.approx(s["llm_calls_per_question"])
        assert float(row["gsm8k/test:seconds_per_question"]) == pytest.approx(s["wall_seconds"] / LIMIT)
        assert float(row["gsm8k/test:generation_seconds_per_question"]) == s["generation_seconds"] / LIMIT
        assert float(row["average:accuracy"]) == s["accuracy"]


def test_debate_actions_per_round(runs):
    """Debate refines with every agent in both rounds: 3 questions x 3 agents per round."""
    debate = run_results.load_run(runs / "debate")
    assert debate.actions_by_round == ((0, 9, 0), (0, 9, 0))
    assert run_results.load_run(runs / "self-consistency").actions_by_round == ()


def result(label: str, benchmark: str, correct: int, n: int, tokens: int, seed: int = 0) -> run_results.RunResult:
    s = Summary(label, benchmark, "test", n, correct / n, wilson_ci(correct, n), tokens * n, 0, float(tokens), 0.0,
                2 * n, 2.0, 0, {}, 0.0, 0.5 * n)
    return run_results.RunResult(Path(f"/runs/{label}-{benchmark}-{seed}"), label, label, benchmark, "test", "scripted",
                                 "default", seed, s, (), False)


def test_options_split_a_label_on_one_benchmark_but_not_between_benchmarks():
    """Each benchmark's own optimised graph is one method's row; two graphs on one benchmark are two rows."""
    def run(benchmark: str, graph: str, seed: int = 0) -> run_results.RunResult:
        return replace(result("gptswarm", benchmark, 1, 2, 100, seed), options=(("graph", graph),))

    own = run_results.split_options([run("gsm8k", "g/graph.json"), run("math", "m/graph.json")])
    assert [r.label for r in own] == ["gptswarm", "gptswarm"]
    two = run_results.split_options([run("gsm8k", "a.json"), run("math", "m.json"), run("gsm8k", "b.json", 1)])
    assert [r.label for r in two] == ["gptswarm [graph=a.json]", "gptswarm [graph=m.json]", "gptswarm [graph=b.json]"]


def test_average_and_pooling_over_seeds():
    results = [result("a", "gsm8k", 5, 10, 100), result("a", "math", 10, 10, 300),
               result("b", "gsm8k", 2, 10, 50), result("b", "gsm8k", 6, 10, 150, seed=1)]
    tab = tables.table(results)
    a, b = tab.rows
    assert (a.mean_accuracy, a.mean_tokens_per_question, a.benchmarks) == (0.75, 200.0, 2)
    pooled = b.cells[0]
    assert (pooled.n, pooled.correct, pooled.accuracy, pooled.runs) == (20, 8, 0.4, 2)
    assert pooled.ci95 == wilson_ci(4, 10)  # two seeds of the same 10 questions: 10 independent questions
    assert pooled.tokens_per_question == 100.0 and b.cells[1] is None
    markdown = tables.to_markdown(tab)
    assert "| a | 50.0 [" in markdown and "| 75.0 | 200 |" in markdown
    assert "| b | 40.0 [" in markdown and "| 40.0 (1/2) | 100 |" in markdown
    assert csv_rows(tables.to_csv(tab))["b"]["math/test:accuracy"] == ""


def test_write_report_writes_tables_and_pngs(runs, tmp_path):
    written = report.write_report([runs], tmp_path / "out")
    names = {p.name for p in written}
    assert names == {"report.md", "report.csv", "accuracy_vs_tokens.png", "actions_per_round.png"}
    for path in written:
        assert path.parent == tmp_path / "out" and path.stat().st_size > 0
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 5000
    text = (tmp_path / "out" / "report.md").read_text()
    assert "training curves: skipped" in text and "![accuracy vs tokens per question](accuracy_vs_tokens.png)" in text


def test_partial_run_is_summarized_from_episodes_without_repairing_it(runs, tmp_path):
    partial = tmp_path / "partial"
    shutil.copytree(runs / "debate", partial)
    (partial / "summary.json").unlink()
    with open(partial / "episodes.jsonl", "a") as f:
        f.write('{"example_id": "torn')
    before = (partial / "episodes.jsonl").read_bytes()
    loaded = run_results.load_run(partial)
    episodes = run_results.read_episodes(partial / "episodes.jsonl")
    assert loaded.partial and len(episodes) == LIMIT
    assert loaded.summary == summarize(episodes, "debate", "gsm8k", "test")
    assert (partial / "episodes.jsonl").read_bytes() == before


def test_an_empty_reference_is_no_row_not_the_default(runs, tmp_path):
    with pytest.raises(DelibError, match="^--reference '' is not a row of this report"):
        report.write_report([runs], tmp_path / "r", reference="")


def test_a_run_with_no_finished_question_is_left_out_with_a_note_not_read_as_zero(runs, tmp_path, caplog):
    empty = tmp_path / "runs" / "started"
    shutil.copytree(runs / "debate", empty)
    (empty / "summary.json").unlink()
    (empty / "episodes.jsonl").write_text('{"example_id": "torn')  # killed before its first question ended
    shutil.copytree(runs / "self-consistency", tmp_path / "runs" / "self-consistency")
    with caplog.at_level("WARNING", logger="deliberation"):
        loaded = run_results.load_runs([tmp_path / "runs"])
    assert [r.method for r in loaded] == ["self-consistency"]
    assert f"{empty.resolve()} holds no finished question yet; it is left out" in caplog.text
    with pytest.raises(DelibError, match="none of the 1 run directories holds a finished question"):
        run_results.load_runs([empty])
    write_training_dir(tmp_path / "mixed" / "train", "softrankpo", 1.0, 0.7)  # training to report: no error
    shutil.copytree(empty, tmp_path / "mixed" / "started")
    assert (tmp_path / "out" / "report.md") in report.write_report([tmp_path / "mixed"], tmp_path / "out")



def test_a_summary_the_episodes_no_longer_hold_is_not_reported(runs, tmp_path):
    """A run whose only episode line is torn, beside a summary.json of earlier episodes, has no finished question:
    the stale summary is not read as its result."""
    torn = tmp_path / "torn"
    shutil.copytree(runs / "debate", torn)
    assert json.loads((torn / "summary.json").read_text())["n"] == LIMIT
    (torn / "episodes.jsonl").write_text('{"example_id": "torn')
    assert run_results.load_run(torn).summary.n == 0


def test_a_report_rewritten_into_its_folder_leaves_no_figure_of_the_earlier_one(runs, tmp_path):
    """A report of runs only, written over one that had training runs, removes the training figures it did not
    draw (they would read as this report's); a file no report writes stays."""
    mixed = tmp_path / "mixed"
    write_training_dir(mixed / "train", "softrankpo", 1.0, 0.7)
    shutil.copytree(runs / "debate", mixed / "debate")
    out = tmp_path / "out"
    first = report.write_report([mixed], out)
    assert out / "training_curves.png" in first and (out / "training_curves.png").exists()
    (out / "notes.txt").write_text("mine")
    second = report.write_report([runs], out)
    assert not (out / "training_curves.png").exists() and out / "training_curves.png" not in second
    assert all(p.exists() for p in second) and (out / "notes.txt").read_text() == "mine"

def write_training_dir(folder: Path, algo: str, scale: float, final_accuracy: float) -> None:
    """A training directory as ``write_training_outputs`` writes it (records built from StepMetrics)."""
    from deliberation.rl.trainer import StepMetrics

    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"algo": algo, "reward_scale": scale}))
    steps = [StepMetrics("sft", 1, 0, 1.1, 0.0, 0.9, None, 0.5, 0.1, (0.5, 0.2, 0.3)),
             StepMetrics(algo, 1, 0, 0.4, 0.01, 0.8, 0.0, 0.6, 0.2, (0.6, 0.2, 0.2)),
             StepMetrics(algo, 2, 1, 0.3, 0.02, 0.7, 0.0, final_accuracy, 0.3, (0.7, 0.1, 0.2))]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(to_json(s)) + "\n" for s in steps))


@pytest.mark.parametrize("line, says", [("{\"step\": 1", "malformed JSON"), ("[1, 2]", "wrong shape"),
                                        ('{"stage": "sft"}', "field 'step'")])
def test_a_damaged_metrics_line_is_named_by_its_number(tmp_path, line, says):
    write_training_dir(tmp_path / "t", "softrankpo", 1.0, 0.7)
    with open(tmp_path / "t" / "metrics.jsonl", "a") as f:
        f.write(line + "\n")
    with pytest.raises(DelibError, match=f"metrics.jsonl line 4: .*{says}"):
        run_results.load_training([tmp_path / "t"])


def test_training_plots_from_metrics(tmp_path):
    for algo, scale, acc in [("softrankpo", 1.0, 0.7), ("softrankpo", 10.0, 0.7), ("grpo", 1.0, 0.65),
                             ("grpo", 10.0, 0.4)]:
        write_training_dir(tmp_path / "train" / f"{algo}-{scale:g}", algo, scale, acc)
    runs = run_results.load_training(run_results.discover([tmp_path / "train"])[1])
    assert sorted((r.final_stage, r.reward_scale, r.final_val_accuracy) for r in runs) == [
        ("grpo", 1.0, 0.65), ("grpo", 10.0, 0.4), ("softrankpo", 1.0, 0.7), ("softrankpo", 10.0, 0.7)]
    written = report.write_report([tmp_path / "train"], tmp_path / "out")
    pngs = {p.name: p for p in written if p.suffix == ".png"}
    assert set(pngs) == {"training_curves.png", "training_actions.png", "reward_scale_ablation.png"}
    assert all(p.read_bytes()[:8] == PNG_MAGIC for p in pngs.values())
    assert "accuracy vs tokens per question: skipped" in (tmp_path / "out" / "report.md").read_text()


def test_ablation_needs_two_reward_scales(tmp_path):
    write_training_dir(tmp_path / "one", "grpo", 1.0, 0.5)
    outcome = plots.reward_scale_ablation(run_results.load_training([tmp_path / "one"]), tmp_path / "a.png")
    assert outcome.path is None and "two or more reward_scale" in outcome.note
    assert not (tmp_path / "a.png").exists()


def test_missing_path_is_a_delib_error(runs, tmp_path):
    with pytest.raises(DelibError, match="nope"):
        report.write_report([runs, tmp_path / "nope"], tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DelibError, match="no run or training directory found under .*empty"):
        report.write_report([tmp_path / "empty"], tmp_path / "out")
    with pytest.raises(DelibError, match="no run directory"):
        run_results.load_runs([tmp_path / "empty"])
    assert not (tmp_path / "out").exists()


def test_without_matplotlib_the_tables_are_still_written(runs, tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    written = report.write_report([runs], tmp_path / "out")
    assert {p.name for p in written} == {"report.md", "report.csv"}
    assert "pip install -e '.[plot]'" in (tmp_path / "out" / "report.md").read_text()


def test_training_table_shows_each_run_before_and_after_rl_with_references(tmp_path):
    write_training_dir(tmp_path / "train" / "srpo", "softrankpo", 10.0, 0.75)
    scores = {"questions": 10, "decisions": 40, "policy_reward": 0.25, "decision_accuracy": 0.8,
              "policy_actions": [0.7, 0.1, 0.2], "fixed_rewards": [0.1, -0.2, 0.05], "oracle_reward": 0.4,
              "oracle_actions": [0.5, 0.3, 0.2]}  # the first held_out.json files held these entries only
    start = {**scores, "decision_accuracy": 0.6, "policy_reward": 0.1, "policy_actions": [0.5, 0.2, 0.3]}
    (tmp_path / "train" / "srpo" / "held_out.json").write_text(json.dumps({"policy": scores, "start": start}))
    write_training_dir(tmp_path / "train" / "grpo", "grpo", 1.0, 0.5)  # no held_out.json: from metrics
    report.write_report([tmp_path / "train"], tmp_path / "out")
    text = (tmp_path / "out" / "report.md").read_text()
    rows = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| ")}
    # the mean ± sd column: the final stage's points only (sft's 0.5 is left out)
    assert "| srpo | softrankpo | 10 | 3 | 0.600 -> 0.800 | 0.675 ± 0.075 | 0.100 -> 0.250 | " \
           "50/20/30 -> 70/10/20 | 0.100 / -0.200 / 0.050 |  |  |  |  | 0.400 |" == rows["| srpo"]  # older file
    assert "| grpo | grpo | 1 | 3 | 0.500 -> 0.500 | 0.550 ± 0.050 | 0.100 -> 0.300 | 50/20/30 -> 70/10/20 " \
           "|  |  |  |  |  |  |" == rows["| grpo"]
    scores.update(fixed_accuracies=[0.7, 0.2, 0.3], gain_ci95=[0.15, -0.05, 0.35], best_rule="agreement-threshold",
                  rule_rewards={"agreement-threshold": 0.3, "confidence-threshold": 0.2},
                  rule_accuracies={"agreement-threshold": 0.6, "confidence-threshold": 0.5},
                  gain_over_rule_ci95=[-0.05, -0.2, 0.1])
    (tmp_path / "train" / "srpo" / "held_out.json").write_text(json.dumps({"policy": scores, "start": start}))
    report.write_report([tmp_path / "train"], tmp_path / "out2")
    assert ("| 0.100 / -0.200 / 0.050 | 0.700 / 0.200 / 0.300 | +0.150 [-0.050, +0.350] | agreement-threshold: 0.300 "
            "| -0.050 [-0.200, +0.100] | 0.400 |") in (tmp_path / "out2" / "report.md").read_text()


@pytest.mark.parametrize("scores, says", [({"questions": 10}, "HeldOut record is missing field(s) decisions"),
                                           ([1, 2], "a JSON list, not an object")])
def test_a_held_out_json_of_another_shape_is_one_line_naming_it_and_the_fix(tmp_path, scores, says):
    write_training_dir(tmp_path / "train" / "srpo", "softrankpo", 1.0, 0.75)
    path = tmp_path / "train" / "srpo" / "held_out.json"
    path.write_text(json.dumps({"policy": scores, "start": None} if isinstance(scores, dict) else scores))
    with pytest.raises(DelibError) as refused:
        report.write_report([tmp_path / "train"], tmp_path / "out")
    message = str(refused.value)
    assert message.startswith(f"{path} is not a held_out.json of `delib train` (") and says in message
    assert message.endswith("; restore it from a copy, or delete it (the report then reads the run's metrics.jsonl)")
    assert "\n" not in message and not (tmp_path / "out").exists()


def test_mpdf_row_names_the_rule_when_no_policy_ships(runs, tmp_path):
    """mpdf with the package's checkpoint is plain `mpdf`; without one it runs the rule, and its row says so."""
    from deliberation.policy import shipped as mpdf

    def label(out, shipped):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("DELIB_DATA_DIR", os.environ.get("DELIB_DATA_DIR") or str(DATA))
            mp.setattr(mpdf, "SHIPPED_POLICY", shipped)
            execute(RunSpec(method="mpdf", benchmark="gsm8k", limit=1, backend="scripted"), str(out), progress=False)
        return run_results.load_run(out).label

    assert label(tmp_path / "shipped", mpdf.SHIPPED_POLICY) == "mpdf"
    assert label(tmp_path / "rule", tmp_path / "absent.pt") == "mpdf [rule:confidence-threshold]"
    assert run_results.load_run(runs / "debate").label == "debate"


def test_runs_of_two_checkpoints_with_one_name_get_two_rows(tmp_path):
    """Every trained checkpoint is called policy.pt: runs of two of them are two rows, named by their hash."""
    from deliberation.policy import shipped as mpdf

    shipped = Path(mpdf.SHIPPED_POLICY).parent
    for name, source in (("a", "default.pt"), ("b", "grpo.pt")):
        (tmp_path / name).mkdir()
        shutil.copy(shipped / source, tmp_path / name / "policy.pt")
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("DELIB_DATA_DIR", os.environ.get("DELIB_DATA_DIR") or str(DATA))
            execute(RunSpec(method="mpdf", benchmark="gsm8k", limit=1, backend="scripted",
                            policy=str(tmp_path / name / "policy.pt")), str(tmp_path / "runs" / name), progress=False)
    labels = [r.label for r in run_results.load_runs([tmp_path / "runs"])]
    assert len(set(labels)) == 2 and all(label.startswith("mpdf [policy, sha256:") for label in labels)
    assert len(tables.table(run_results.load_runs([tmp_path / "runs"])).rows) == 2
    alone = run_results.load_runs([tmp_path / "runs" / "a"])
    assert [r.label for r in alone] == ["mpdf [policy]"]  # no hash when nothing would pool


def test_runs_of_one_method_with_other_engine_settings_get_two_rows(tmp_path):
    """self-consistency with 3 and with 9 agents, copied without cell.json, are two rows named by agents."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DELIB_DATA_DIR", os.environ.get("DELIB_DATA_DIR") or str(DATA))
        for agents in (3, 9):
            spec = RunSpec(method="self-consistency", benchmark="gsm8k", limit=1, backend="scripted",
                           engine=EngineConfig(agents=agents))
            execute(spec, str(tmp_path / f"sc{agents}"), progress=False)
    labels = sorted(r.label for r in run_results.load_runs([tmp_path]))
    assert labels == ["self-consistency [agents=3]", "self-consistency [agents=9]"]
    assert [r.label for r in run_results.load_runs([tmp_path / "sc9"])] == ["self-consistency"]
    report.write_report([tmp_path], tmp_path / "report")  # what `delib report` writes splits them too
    rows = csv_rows((tmp_path / "report" / "report.csv").read_text())
    assert sorted(rows) == ["self-consistency [agents=3]", "self-consistency [agents=9]"]


def test_a_copied_run_directory_is_refused_not_counted_twice(runs, tmp_path, capsys):
    """A backup copy beside the original would pool into one row with n doubled. The same settings run again
    into another directory are not a copy: that run records its own episodes (their timings differ)."""
    from deliberation.cli.main import main

    shutil.copytree(runs / "debate", tmp_path / "debate-backup")
    with pytest.raises(DelibError, match="hold the same run") as err:
        report.write_report([runs, tmp_path], tmp_path / "report")
    assert str(runs / "debate") in str(err.value) and str(tmp_path / "debate-backup") in str(err.value)
    assert not (tmp_path / "report").exists()
    assert main(["report", str(runs), str(tmp_path / "debate-backup"), "--out", str(tmp_path / "report")]) == 2
    assert "count its questions twice" in capsys.readouterr().err
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DELIB_DATA_DIR", os.environ.get("DELIB_DATA_DIR") or str(DATA))
        spec = RunSpec(method="debate", benchmark="gsm8k", limit=LIMIT, backend="scripted")
        execute(spec, str(tmp_path / "again"), progress=False, backend=make_backend("scripted", benchmark="gsm8k"))
    assert len(run_results.load_runs([runs / "debate", tmp_path / "again"])) == 2


def test_the_accuracy_legend_sits_inside_the_panel_above_every_point_and_interval():
    """15 methods whose intervals reach 100%: the raised y axis leaves the legend room no data reaches."""
    fig, (ax,) = plots.new_figure(1, size=(6.4, 4.8))
    styles = figure_styles(f"method-{i}" for i in range(15))
    handles = {label: ax.errorbar(300 * (i + 1), 60, yerr=[[40], [40]], **style.errorbar())
               for i, (label, style) in enumerate(styles.items())}
    plots.legend_above_points(ax, handles)
    fig.draw_without_rendering()
    legend, panel = ax.get_legend().get_window_extent(), ax.get_window_extent()
    top_of_data = ax.transData.transform((0, 100))[1]
    assert panel.x0 <= legend.x0 and legend.x1 <= panel.x1 and legend.y1 <= panel.y1
    assert legend.y0 > top_of_data
    assert max(ax.get_yticks()) <= 100 < ax.get_ylim()[1]
    assert fig.get_figwidth() == 6.4  # a legend that fits leaves the figure as sized


def test_a_legend_wider_than_its_panel_widens_the_figure_instead_of_collapsing_the_layout():
    """31 labels, long ones among them, in two panels: the legend (six rows, six columns) was wider than the
    panel; the constrained layout collapsed (a warning) and squeezed the points under a legend cut off."""
    fig, axes = plots.new_figure(2, size=(6.4, 4.8))
    styles = figure_styles([*(f"method-{i}" for i in range(25)), *(f"mpdf [runs/long/path-{i}/policy.pt]"
                                                                   for i in range(6))])
    handles = {label: axes[0].errorbar(300 * (i + 1), 60, yerr=[[10], [10]], **style.errorbar())
               for i, (label, style) in enumerate(styles.items())}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plots.legend_above_points(axes[0], handles)
        fig.draw_without_rendering()
    legend, panel = axes[0].get_legend().get_window_extent(), axes[0].get_window_extent()
    assert panel.x0 <= legend.x0 and legend.x1 <= panel.x1 and legend.y1 <= panel.y1
    assert fig.get_figwidth() > 2 * 6.4 and axes[1].get_window_extent().width >= panel.width * 0.95


def test_the_action_legend_names_every_action_any_panel_drew(tmp_path, monkeypatch):
    """A rule without RESAMPLE first and one that resamples after it: the one legend (first panel) names all
    four actions. It named only the first panel's three, so look 1's resample bars had no entry."""
    drawn = {}
    monkeypatch.setattr(plots, "save_figure", lambda fig, path, name: drawn.setdefault("figure", fig))
    results = [replace(result("always-concede", "gsm8k", 1, 2, 10), actions_by_round=((0, 0, 6),)),
               replace(result("agreement-resample", "gsm8k", 1, 2, 10), actions_by_round=((2, 0, 1, 3),))]
    plots.action_distribution(results, tmp_path / "actions.png")
    first, second = drawn["figure"].axes
    assert [t.get_text() for t in first.get_legend().get_texts()] == ["persist", "refine", "concede", "resample"]
    assert second.get_legend() is None


def test_an_interval_end_past_its_value_by_rounding_draws_no_arm_instead_of_failing():
    """A Wilson interval at 100% ends at 0.9999999999999999 (matplotlib refuses negative error bars)."""
    from deliberation.report.plots import error_bar
    from deliberation.runs.directory import wilson_ci

    low, high = (100 * end for end in wilson_ci(6, 6))
    assert high < 100.0  # the case: 6 of 6 right
    assert error_bar(100.0, low, high) == [[100.0 - low], [0.0]]
    assert error_bar(50.0, 40.0, 70.0) == [[10.0], [20.0]]
    assert error_bar(0.0, 1e-15, 30.0) == [[0.0], [30.0]]

