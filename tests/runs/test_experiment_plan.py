"""``delib experiment --plan``: cells, calls, tokens and hours before anything runs, with no server asked;
and experiments/paper.toml, its backbones and a slice of it run end to end against a local fake server."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from deliberation.cli.main import main
from deliberation.errors import DelibError
from deliberation.report.write import write_report
from deliberation.runs import plan as plan_mod
from deliberation.runs.experiment import plan, run_experiment
from deliberation.runs.experiment_file import (cap_limits, load_experiment, only_backbones, only_benchmarks,
                                               only_methods)
from fake_openai import FakeOpenAI

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "experiments" / "paper.toml"
GRID = """
name = "grid"
out = "{out}"
methods = ["cot", "self-consistency", "debate", "mpdf"]
benchmarks = ["gsm8k"]
limit = 4
[backend]
name = "scripted"
benchmark = "gsm8k"
[engine]
agents = 5
rounds = 2
max_tokens = {max_tokens}
"""


def grid(tmp_path: Path, max_tokens: int = 1024, extra: str = "") -> Path:
    path = tmp_path / "grid.toml"
    path.write_text(GRID.replace("{out}", (tmp_path / "out").as_posix()).replace("{max_tokens}", str(max_tokens))
                    + extra)
    return path


def exit_code(argv: list[str]) -> int:
    """``delib``'s exit status: flag errors exit from the parser, the others return."""
    try:
        return main(argv)
    except SystemExit as stop:
        return int(stop.code)


def cell(estimate: plan_mod.Plan, label: str) -> plan_mod.CellCost:
    return next(c for c in estimate.cells if c.at.arm.label == label)


def test_calls_tokens_and_hours_of_each_cell(tmp_path):
    estimate = plan_mod.estimate(load_experiment(grid(tmp_path)), throughput=100.0)
    per_answer = plan_mod.ANSWER_TOKENS["gsm8k"]
    assert cell(estimate, "cot").total_calls() == (4, 4)
    assert cell(estimate, "self-consistency").total_calls() == (20, 20)  # 5 samples a question
    assert cell(estimate, "debate").total_calls() == (60, 60)  # 5 agents x 3 rounds a question
    assert cell(estimate, "mpdf").total_calls() == (40, 120)  # answers and critics, 5..15 each
    assert cell(estimate, "debate").tokens() == (60 * per_answer,) * 2
    assert cell(estimate, "mpdf").tokens() == (4 * 5 * (per_answer + 1), 4 * 15 * (per_answer + 1))
    # round 0: cot's 1, self-consistency's 5, debate's 5 and mpdf's 5 answers are the same requests: 5 are sent
    assert estimate.shared_answers == 4 * (1 + 5 + 5 + 5 - 5)
    assert estimate.shared_tokens == estimate.shared_answers * per_answer
    text = "\n".join(plan_mod.lines(estimate, "grid.toml"))
    debate_hours = 60 * per_answer / 100 / 3600
    assert f"{debate_hours:.2f}" in next(line for line in text.splitlines() if " debate " in line)
    assert "4 cells = 1 backbone(s) x 1 benchmark(s) x 4 method(s) x 1 seed(s)" in text
    assert f"gsm8k {per_answer} tokens" in text and "100 generated tokens/s" in text


def test_answers_are_assumed_no_longer_than_max_tokens_and_answer_tokens_replaces_the_table(tmp_path):
    assert cell(plan_mod.estimate(load_experiment(grid(tmp_path, max_tokens=100))), "cot").tokens() == (400, 400)
    given = plan_mod.estimate(load_experiment(grid(tmp_path)), answer_tokens=50)
    assert cell(given, "debate").tokens() == (60 * 50, 60 * 50)
    assert "as --answer-tokens gives" in "\n".join(plan_mod.lines(given, "grid.toml"))


def test_answer_tokens_are_the_committed_self_consistency_means():
    """The table is what docs/results/table1 holds, so it cannot drift from the runs it cites."""
    for bench, tokens in plan_mod.ANSWER_TOKENS.items():
        summary = json.loads((REPO / "docs/results/table1" / bench / "self-consistency-s0/summary.json").read_text())
        assert tokens == round(summary["completion_tokens"] / summary["llm_calls"]), bench


def test_paper_grid_loads_with_four_backbones_and_plans_without_a_server(monkeypatch, capsys):
    monkeypatch.delenv("DELIB_BASE_URL", raising=False)
    cfg = load_experiment(PAPER)
    assert [b.options["model"] for b in cfg.backbones] == [
        "meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-3B-Instruct", "Qwen/Qwen2.5-7B-Instruct",
        "Qwen/Qwen2.5-3B-Instruct"]
    assert cfg.backend == "openai" and cfg.benchmarks == ("gsm8k", "math", "aime24", "amc23", "mmlu", "humaneval")
    assert {"cot", "self-consistency", "php", "debate", "dylan", "mpdf", "gptswarm", "agentprune"} <= {
        a.label for a in cfg.arms}
    assert main(["experiment", str(PAPER), "--plan", "--benchmarks", "gsm8k", "--throughput", "2500"]) == 0
    out = capsys.readouterr().out
    assert "40 cells = 4 backbone(s) x 1 benchmark(s) x 10 method(s)" in out and "at 2500 tokens/s" in out
    assert "not counted (1 cells, e.g. qwen2.5-7b/gsm8k/agentprune)" in out  # its graph is not made yet
    with pytest.raises(DelibError, match="reads the environment variable DELIB_BASE_URL, which is not set"):
        plan(cfg)  # running needs the server's address; the plan did not


def test_backbone_paths_and_folders(monkeypatch):
    monkeypatch.setenv("DELIB_BASE_URL", "http://127.0.0.1:9/v1")
    cells = plan(only_benchmarks(load_experiment(PAPER), ["aime24"]))
    agentprune = next(c for c in cells if c.label == "agentprune" and c.backbone == "qwen2.5-3b")
    assert agentprune.spec.graph == "runs/paper/graphs/qwen2.5-3b/agentprune/graph.json"
    assert agentprune.out == Path("runs/paper/qwen2.5-3b/aime24/agentprune-s0")
    assert agentprune.spec.backend_options["base_url"] == "http://127.0.0.1:9/v1"
    assert agentprune.spec.backend_options["model"] == "Qwen/Qwen2.5-3B-Instruct"


@pytest.mark.parametrize("argv, message", [
    (["absent.toml", "--plan"], "experiment file absent.toml not found"),
    (["", "--plan"], "the experiment file's path is empty"),
    (["{grid}", "--plan", "--throughput", "0"], "--throughput: must be generated tokens per second above 0"),
    (["{grid}", "--plan", "--throughput", "nan"], "above 0, got 'nan'"),
    (["{grid}", "--plan", "--throughput", "fast"], "above 0, got 'fast'"),
    (["{grid}", "--plan", "--methods", "aflow-html"], "--methods: 'aflow-html' is not in"),
    (["{grid}", "--plan", "--backbones", "gpt-9"], "--backbones: 'gpt-9' is not in"),
    (["{grid}", "--throughput", "10"], "--throughput and --answer-tokens size a --plan"),
])
def test_bad_input_is_one_line_and_a_non_zero_exit(tmp_path, capsys, argv, message):
    path = grid(tmp_path)
    assert exit_code(["experiment", *[a.replace("{grid}", str(path)) for a in argv]]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and message in err
    assert not (tmp_path / "out").exists()


def test_an_unknown_method_in_the_file_is_one_line(tmp_path, capsys):
    path = grid(tmp_path)
    path.write_text(path.read_text().replace('"mpdf"]', '"mpdf", "tree-of-thought"]'))
    assert main(["experiment", str(path), "--plan"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "unknown method 'tree-of-thought'" in err


@pytest.mark.parametrize("extra, message", [
    ('\n[[backbones]]\nlabel = "a"\n[[backbones]]\nlabel = "a"\n', "labels must differ"),
    ('\n[[backbones]]\nlabel = "a"\nmodle = "x"\n', "takes no option 'modle'"),
    ('\n[[backbones]]\nmodel = "x"\n', "needs a label"),
    ('\n[[variants]]\nlabel = "m2"\nmethod = "mpdf"\npolicy = "p/{backbone}.pt"\n', "has no [[backbones]]"),
])
def test_bad_backbones_are_refused_when_the_file_is_read(tmp_path, extra, message):
    with pytest.raises(DelibError, match=message.replace("[", r"\[")):
        load_experiment(grid(tmp_path, extra=extra))


def test_a_slice_of_the_paper_grid_runs_end_to_end_against_a_local_server(tmp_path, monkeypatch):
    """One backbone, one benchmark, two methods, two questions, through the openai backend to a fake
    OpenAI-compatible server: the run directories and the report are written, the backbone's model is asked,
    and the requests that reach the server are the plan's count (cot's answer is self-consistency's first)."""
    server = FakeOpenAI([])
    threading.Thread(target=server.httpd.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("DELIB_BASE_URL", server.base_url)
        cfg = only_methods(only_benchmarks(only_backbones(load_experiment(PAPER), ["qwen2.5-3b"]), ["gsm8k"]),
                           ["cot", "self-consistency"])
        cfg = replace(cap_limits(cfg, 2), out=str(tmp_path / "paper"), concurrency=1)
        estimate = plan_mod.estimate(cfg)
        summaries = run_experiment(cfg, progress=False, report=write_report)
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
    assert [(s.method, s.n) for s in summaries] == [("cot", 2), ("self-consistency", 2)]
    for label in ("cot", "self-consistency"):
        folder = tmp_path / "paper" / "qwen2.5-3b" / "gsm8k" / f"{label}-s0"
        assert (folder / "episodes.jsonl").exists() and (folder / "summary.json").exists()
        config = json.loads((folder / "config.json").read_text())
        assert config["backend_options"]["base_url"] == server.base_url
    assert (tmp_path / "paper" / "report" / "report.md").exists()
    assert {body["model"] for body in server.bodies} == {"Qwen/Qwen2.5-3B-Instruct"}
    sent = sum(c.total_calls()[0] for c in estimate.cells) - estimate.shared_answers
    assert len(server.bodies) == sent == 2 * 3
