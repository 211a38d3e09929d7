"""Mixed teams end to end on the scripted backend with distinct models (docs/guides/backends.md, "Mixed teams"):
`delib run --team`, an experiment's [[agents]], the run record per model, the checks made before anything is
written, and `delib report` keeping the models apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliberation.cli.main import main
from deliberation.errors import DelibError
from deliberation.report.loading import load_runs
from deliberation.runs.api import run_benchmark
from deliberation.runs.directory import RunDir
from deliberation.runs.experiment import plan, run_experiment
from deliberation.runs.experiment_file import load_experiment, parse_experiment

RUN = ["--backend", "scripted", "--backend-opt", "benchmark=gsm8k", "--limit", "3", "--quiet"]


def delib_run(out: Path, *args: str) -> int:
    return main(["run", *RUN, "--out", str(out), *args])


def turns(out: Path):
    return [t for e in RunDir(out).episodes() for t in e.turns]


def test_round_0_of_a_mixed_team_is_the_cache_entry_of_each_model_alone(tmp_path: Path):
    cache = str(tmp_path / "responses.sqlite")
    assert delib_run(tmp_path / "strong", "--method", "self-consistency", "--model", "strong", "--cache", cache) == 0
    assert delib_run(tmp_path / "mixed", "--method", "debate", "--rounds", "1", "--cache", cache,
                     "--team", "strong,weak,strong") == 0
    round0 = [t for t in turns(tmp_path / "mixed") if t.round == 0]
    assert {t.agent for t in round0 if t.cached} == {0, 2} and not any(t.cached for t in round0 if t.agent == 1)
    alone = {(e.example_id, t.agent): t.text for e in RunDir(tmp_path / "strong").episodes() for t in e.turns}
    mixed = {(e.example_id, t.agent): t.text for e in RunDir(tmp_path / "mixed").episodes() for t in e.turns
             if t.round == 0 and t.agent != 1}
    assert mixed == {k: v for k, v in alone.items() if k[1] != 1}
    assert delib_run(tmp_path / "weak", "--method", "self-consistency", "--model", "weak", "--cache", cache) == 0
    assert delib_run(tmp_path / "again", "--method", "debate", "--rounds", "1", "--cache", cache,
                     "--team", "strong,weak,strong") == 0
    assert all(t.cached for t in turns(tmp_path / "again") if t.round == 0)  # both models alone paid for it


def test_the_run_records_the_team_and_tokens_per_model(tmp_path: Path):
    out = tmp_path / "mixed"
    assert delib_run(out, "--method", "debate", "--rounds", "1", "--team", "strong,weak,strong") == 0
    config = json.loads((out / "config.json").read_text())
    assert config["backend"] == "team" and config["engine"]["agents"] == 3
    assert config["backend_options"]["members"] == [{"backend": "scripted", "benchmark": "gsm8k", "model": m}
                                                    for m in ("strong", "weak", "strong")]
    by_model = json.loads((out / "summary.json").read_text())["tokens_by_model"]
    for model, agents in (("strong", {0, 2}), ("weak", {1})):
        mine = [t for t in turns(out) if t.agent in agents]
        assert by_model[model] == {"prompt_tokens": sum(t.prompt_tokens for t in mine),
                                   "completion_tokens": sum(t.completion_tokens for t in mine),
                                   "llm_calls": sum(t.llm_calls for t in mine)}
    summary = json.loads((out / "summary.json").read_text())
    assert sum(m["completion_tokens"] for m in by_model.values()) == summary["completion_tokens"]


def test_the_team_sets_the_agents_and_a_one_agent_method_runs_agent_0s_model(tmp_path: Path):
    assert delib_run(tmp_path / "pair", "--method", "debate", "--rounds", "1", "--team", "a,b") == 0
    assert json.loads((tmp_path / "pair" / "config.json").read_text())["engine"]["agents"] == 2
    assert {t.agent for t in turns(tmp_path / "pair")} == {0, 1}
    assert delib_run(tmp_path / "cot", "--method", "cot", "--team", "weak,strong") == 0
    by_model = json.loads((tmp_path / "cot" / "summary.json").read_text())["tokens_by_model"]
    assert by_model["weak"]["llm_calls"] == 3 and by_model["strong"]["llm_calls"] == 0


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("delib: error:")
    return err


@pytest.mark.parametrize("args, message", [
    (["--method", "debate", "--team", "a,b,c", "--agents", "4"], "the team names 3 models but debate runs 4 agents"),
    (["--method", "self-consistency", "--team", "a,b", "--agents", "5"], "names 2 models but self-consistency"),
    (["--method", "debate", "--team", "a,b", "--model", "a"], "--team names every agent's model; drop --model"),
    (["--method", "debate", "--team", "a", "--rounds", "1"], "leaves it no peers"),
    (["--method", "debate", "--team", "a,b", "--backend", "llamacpp"],  # RUN's --backend-opt benchmark=gsm8k
     "team agent 0: backend 'llamacpp' takes no option benchmark"),
])
def test_bad_teams_are_one_line_and_write_nothing(tmp_path: Path, capsys, args, message):
    code = main(["run", *RUN, "--out", str(tmp_path / "run"), *args])
    assert code == 2 and message in one_line_error(capsys)
    assert not (tmp_path / "run").exists()


def test_an_unknown_or_missing_model_is_refused_before_any_model_loads(tmp_path: Path, capsys):
    out = tmp_path / "run"
    base = ["run", "--method", "debate", "--limit", "1", "--out", str(out), "--quiet", "--backend", "llamacpp"]
    present = tmp_path / "present.gguf"  # checked to exist, never loaded
    present.write_bytes(b"")
    assert main([*base, "--team", f"{present},qwen-typo"]) == 2
    assert "team agent 1: unknown model 'qwen-typo'" in one_line_error(capsys)
    assert main([*base, "--team", f"{tmp_path / 'absent.gguf'},{present}"]) == 2
    assert "team agent 0: model file" in one_line_error(capsys) and not out.exists()


def test_an_empty_team_is_a_usage_error(tmp_path: Path, capsys):
    with pytest.raises(SystemExit) as done:
        main(["run", *RUN, "--method", "debate", "--out", str(tmp_path / "run"), "--team", ","])
    assert done.value.code == 2 and "--team: names nothing" in capsys.readouterr().err


AGENTS = """
name = "mixed"
out = "{out}"
methods = ["self-consistency", "debate"]
benchmarks = ["gsm8k"]
limit = 4
[engine]
rounds = 1
[backend]
name = "scripted"
benchmark = "gsm8k"
[[agents]]
model = "strong"
skills = [1.3]
[[agents]]
model = "weak"
skills = [-0.5]
[[agents]]
model = "strong"
skills = [1.3]
"""


def test_an_experiment_gives_each_agent_its_model_and_options(tmp_path: Path):
    path = tmp_path / "exp.toml"
    path.write_text(AGENTS.replace("{out}", (tmp_path / "out").as_posix()))
    cfg = load_experiment(path)
    assert cfg.backend == "team" and all(cell.spec.engine.agents == 3 for cell in plan(cfg))
    sc, _ = run_experiment(cfg, progress=False)
    assert sc.tokens_by_model.keys() == {"strong", "weak"}
    round0 = [t for t in turns(tmp_path / "out" / "gsm8k" / "self-consistency-s0")]
    assert all(t.correct for t in round0 if t.agent != 1) and not any(t.correct for t in round0 if t.agent == 1)
    debate0 = [t for t in turns(tmp_path / "out" / "gsm8k" / "debate-s0") if t.round == 0]
    assert all(t.cached for t in debate0)  # served to the second method from each member's cache


def agents_file(extra: str = "", agents: str = '[[agents]]\nmodel = "a"\n[[agents]]\nmodel = "b"\n') -> dict:
    import tomllib

    return tomllib.loads(f'name = "x"\nmethods = ["debate"]\nbenchmarks = ["gsm8k"]\n{extra}\n'
                         f'[backend]\nname = "scripted"\n{agents}')


@pytest.mark.parametrize("raw, message", [
    (agents_file("[engine]\nagents = 3\n"), "exp.toml: debate: the team names 2 models but debate runs 3 agents"),
    (agents_file('[[variants]]\nlabel = "big"\nmethod = "self-consistency"\nagents = 5\n'), "big: the team names 2"),
    (agents_file(agents='[[agents]]\nmodel = "a"\nskils = 1\n'), "exp.toml: [[agents]] team agent 0: backend "
                                                                  "'scripted' takes no option skils"),
    (agents_file('agents = ["a", "b"]', agents=""), "exp.toml: agents must be [[agents]] tables"),
])
def test_bad_agents_tables_are_refused_naming_the_file(raw, message):
    with pytest.raises(DelibError) as err:
        parse_experiment(raw, "exp.toml")
    assert message in str(err.value)


def test_a_two_agent_team_file_sets_two_agents():
    cfg = parse_experiment(agents_file(), "exp.toml")
    assert cfg.arms[0].engine.agents == 2 and cfg.backend_options["members"][1] == {"backend": "scripted",
                                                                                    "model": "b"}


def test_run_benchmark_takes_a_team(tmp_path: Path):
    summary = run_benchmark("debate", tmp_path / "api", limit=2, backend="scripted", backend_options={
        "benchmark": "gsm8k"}, team=["strong", {"model": "weak", "skills": [0.1]}])
    assert summary.tokens_by_model.keys() == {"strong", "weak"}
    assert json.loads((tmp_path / "api" / "config.json").read_text())["engine"]["agents"] == 2


def test_report_keeps_runs_of_other_models_apart(tmp_path: Path):
    for name, model in (("strong", ["--model", "strong"]), ("weak", ["--model", "weak"]),
                        ("mixed", ["--team", "strong,weak,strong"])):
        assert delib_run(tmp_path / name, "--method", "debate", "--rounds", "1", *model) == 0
    labels = {r.path.name: r.label for r in load_runs([tmp_path])}
    assert labels == {"strong": "debate [strong]", "weak": "debate [weak]", "mixed": "debate [strong,weak,strong]"}
