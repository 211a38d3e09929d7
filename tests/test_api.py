"""The public seam (``deliberation/__init__.py``): what a Python user needs to run a method and load a policy."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import deliberation
from deliberation.cli.main import main
from deliberation.types import to_json


def test_import_is_light_and_names_load_on_use():
    """``import deliberation`` loads neither torch nor a backend; each public name resolves."""
    code = "import deliberation, sys; print('torch' in sys.modules, 'deliberation.methods' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]
    for name in deliberation.__all__:
        getattr(deliberation, name)  # an AttributeError or ImportError names the one that does not resolve


def test_run_method_gives_the_episode_delib_run_records(tmp_path):
    """Same example, method, engine and seed: the episode of ``run_method`` is the one ``delib run`` wrote
    (timing fields aside)."""
    out = tmp_path / "run"
    assert main(["run", "--method", "mpdf", "--backend", "scripted", "--limit", "2", "--quiet", "--seed", "3",
                 "--out", str(out)]) == 0
    recorded = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    bench = deliberation.load_benchmark("gsm8k")
    backend = deliberation.make_backend("scripted")
    for example, row in zip(bench.load("test", limit=2), recorded):
        episode = deliberation.run_method("mpdf", example, backend, benchmark="gsm8k",
                                          engine=deliberation.EngineConfig(seed=3))
        got = {k: v for k, v in to_json(episode).items() if k not in ("wall_seconds", "generation_seconds")}
        assert got == {k: v for k, v in row.items() if k not in ("wall_seconds", "generation_seconds")}


def test_load_policy_gives_a_policy_the_engine_can_call():
    from deliberation.engine.state import AgentView, observe

    policy = deliberation.load_policy("default")
    obs = observe([AgentView("18", "so 18", 0.9, 50, False, False), AgentView("18", "18", 0.8, 40, False, False),
                   AgentView("7", "7", 0.3, 30, False, False)], 1, 2)
    actions, logprobs = policy.decide(obs, np.random.default_rng(0))
    assert len(actions) == 3 and all(a in deliberation.Action for a in actions) and logprobs == (0.0,) * 3


README = Path(__file__).resolve().parents[1] / "README.md"


def readme_python(section: str) -> list[str]:
    """The ```python blocks of the README section headed ``section``."""
    text = README.read_text().split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_the_readme_python_examples_run(tmp_path, monkeypatch, capsys):
    """Every example of README "From Python" runs as written (on the scripted simulator it names)."""
    blocks = readme_python("From Python")
    assert len(blocks) == 2 and all('backend="scripted"' in b for b in blocks)
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].split()[0].isdigit() and printed[1].startswith("0 0 None ")  # answer, tokens; round 0
    assert (tmp_path / "runs" / "api-subset" / "summary.json").exists()


def test_deliberate_returns_the_answer_the_episode_and_its_tokens():
    question = "A shop sells pens at 3 for 2 dollars. How much do 12 pens cost?"
    result = deliberation.deliberate(question, method="mpdf", backend="scripted", agents=3, rounds=2)
    assert isinstance(result, deliberation.DeliberationResult) and result.question == question
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.answer = "1"  # type: ignore[misc]
    turns = result.episode.turns
    assert [t.round for t in turns[:3]] == [0, 0, 0] and all(t.action is None for t in turns[:3])
    assert all(t.action in deliberation.Action for t in turns[3:]) and all(t.confidence is not None for t in turns)
    assert result.answer == result.episode.final_answer and result.answer in result.response
    assert result.prompt_tokens == sum(t.prompt_tokens for t in turns) > 0
    assert result.completion_tokens == sum(t.completion_tokens for t in turns) > 0
    assert result.llm_calls == sum(t.llm_calls for t in turns) and not result.episode.correct
    again = deliberation.deliberate(question, method="mpdf", backend=deliberation.make_backend(
        "scripted", benchmark="ask:numeric"), engine=deliberation.EngineConfig(agents=3, rounds=2))
    untimed = lambda r: dataclasses.replace(r, episode=dataclasses.replace(r.episode, wall_seconds=0.0))  # noqa
    assert untimed(again) == untimed(result)


def test_deliberate_refuses_what_delib_run_refuses():
    with pytest.raises(deliberation.DelibError, match="--policy means nothing to method debate"):
        deliberation.deliberate("2+2?", method="debate", backend="scripted", policy="default")
    with pytest.raises(deliberation.DelibError, match="unknown answer type 'essay'"):
        deliberation.deliberate("2+2?", backend="scripted", answer_type="essay")


def test_run_benchmark_writes_the_run_delib_run_writes(tmp_path):
    assert main(["run", "--method", "cot", "--backend", "scripted", "--offset", "1", "--limit", "2", "--quiet",
                 "--out", str(tmp_path / "cli")]) == 0
    summary = deliberation.run_benchmark("cot", tmp_path / "api", "gsm8k", backend="scripted", limit=2,
                                         selection=deliberation.Selection(offset=1))
    assert isinstance(summary, deliberation.Summary) and summary.n == 2
    cli, api = ([{k: v for k, v in json.loads(line).items() if "seconds" not in k}
                 for line in (tmp_path / d / "episodes.jsonl").read_text().splitlines()] for d in ("cli", "api"))
    assert cli == api


def test_run_experiment_runs_a_file_and_its_report(tmp_path):
    path = tmp_path / "e.toml"
    path.write_text(f'name = "e"\nout = "{tmp_path / "out"}"\nmethods = ["cot", "self-consistency"]\n'
                    'benchmarks = ["gsm8k"]\nlimit = 3\n[backend]\nname = "scripted"\n')
    summaries = deliberation.run_experiment(path, limit=2, methods=["self-consistency"],
                                            report=deliberation.write_report)
    assert [(s.method, s.n) for s in summaries] == [("self-consistency", 2)]
    assert (tmp_path / "out" / "report" / "report.md").exists()
