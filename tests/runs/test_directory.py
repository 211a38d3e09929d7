"""Run directory: durable appends, torn lines, Wilson interval."""

import json
from dataclasses import replace

import pytest

from deliberation.errors import DelibError
from deliberation.runs.directory import RunDir, summarize, wilson_ci
from deliberation.types import Action, Episode, Turn


def episode(i, correct=True):
    turn = Turn(0, 0, None, "1", "text", 0.5, 10, 5, 1, False, correct)
    return Episode(f"ex{i}", "m", "1", correct, (turn, Turn(0, 1, Action.PERSIST, "1", "text", 0.5)), 1, 0.1)


def test_append_and_read_back(tmp_path):
    run = RunDir.open(tmp_path, {"method": "m"})
    for i in range(3):
        run.append(episode(i, correct=i != 1))
    assert run.episodes() == [episode(0), episode(1, False), episode(2)]
    assert run.finished_ids() == {"ex0", "ex1", "ex2"}


def test_unicode_line_separators_inside_a_response_do_not_split_the_episode(tmp_path):
    """json.dumps(ensure_ascii=False) leaves U+2028 and U+0085 raw; str.splitlines would break there."""
    from dataclasses import replace

    from deliberation.report.loading import read_episodes

    ep = episode(0)
    ep = replace(ep, turns=(replace(ep.turns[0], text="a\u2028b\x85c\u2029d"), *ep.turns[1:]))
    run = RunDir.open(tmp_path, {"method": "m"})
    run.append(ep)
    run.append(episode(1))
    assert run.episodes() == [ep, episode(1)] and read_episodes(tmp_path / "episodes.jsonl") == [ep, episode(1)]
    assert "\u2028" in (tmp_path / "episodes.jsonl").read_text()  # written raw, read back whole


def test_torn_last_line_is_dropped(tmp_path):
    run = RunDir.open(tmp_path, {"method": "m"})
    run.append(episode(0))
    with open(tmp_path / "episodes.jsonl", "a") as f:
        f.write('{"example_id": "ex1", "meth')
    assert run.finished_ids() == {"ex0"}
    resumed = RunDir.open(tmp_path, {"method": "m"})  # the next run cuts the torn line before appending
    resumed.append(episode(2))
    assert [e.example_id for e in resumed.episodes()] == ["ex0", "ex2"]


def test_checking_a_directory_writes_nothing(tmp_path):
    """``prepare`` and reading only read: a line being written by a live run is not cut from under it."""
    RunDir.open(tmp_path, {"method": "m"}).append(episode(0))
    with open(tmp_path / "episodes.jsonl", "a") as f:
        f.write('{"example_id": "ex1", "meth')
    before = (tmp_path / "episodes.jsonl").read_bytes()
    run = RunDir.prepare(tmp_path, {"method": "m"})
    assert run.finished_ids() == {"ex0"} and (tmp_path / "episodes.jsonl").read_bytes() == before


def test_summary_counts():
    s = summarize([episode(0), episode(1, False)], "m", "b", "test")
    assert s.n == 2 and s.accuracy == 0.5 and s.prompt_tokens == 20 and s.completion_tokens == 10
    assert s.tokens_per_question == 15 and s.actions == {"persist": 2, "refine": 0, "concede": 0}


@pytest.mark.parametrize("k, n", [(0, 10), (5, 10), (10, 10), (1, 1)])
def test_wilson_ci_contains_the_rate(k, n):
    lo, hi = wilson_ci(k, n)
    assert 0 <= lo <= k / n <= hi <= 1 and hi - lo > 0


def test_resume_accepts_other_thread_count_and_cache_path(tmp_path):
    first = {"method": "m", "cache": "a.sqlite", "backend_options": {"model": "x", "n_threads": 1}}
    RunDir.open(tmp_path, first).append(episode(0))
    RunDir.open(tmp_path, {"method": "m", "cache": "b.sqlite", "backend_options": {"model": "x"}}).append(episode(1))
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["cache"] == "a.sqlite" and config["resumes"] == [{"cache": "b.sqlite"}]


def test_a_run_recorded_before_confidence_threshold_existed_resumes_at_its_default(tmp_path):
    old = {"method": "confidence-threshold", "backend_options": {}}
    RunDir.open(tmp_path, old).append(episode(0))
    RunDir.open(tmp_path, {**old, "confidence_threshold": 0.7})
    with pytest.raises(DelibError, match=r"other settings \(confidence_threshold\)"):
        RunDir.open(tmp_path, {**old, "confidence_threshold": 0.9})


def test_resume_refuses_another_model_or_temperature(tmp_path):
    RunDir.open(tmp_path, {"method": "m", "backend_options": {"model": "x"}, "engine": {"temperature": 0.7}}).append(
        episode(0))
    with pytest.raises(DelibError, match="backend_options"):
        RunDir.open(tmp_path, {"method": "m", "backend_options": {"model": "y"}, "engine": {"temperature": 0.7}})
    with pytest.raises(DelibError, match="engine"):
        RunDir.open(tmp_path, {"method": "m", "backend_options": {"model": "x"}, "engine": {"temperature": 0.0}})


def test_an_extension_killed_midway_reports_its_episodes_not_the_old_summary(tmp_path, monkeypatch):
    import os
    from dataclasses import replace
    from pathlib import Path

    from deliberation.report import loading as run_results
    from deliberation.runs import runner

    data = Path(__file__).resolve().parents[3] / "shared" / "data"
    monkeypatch.setenv("DELIB_DATA_DIR", os.environ.get("DELIB_DATA_DIR") or str(data))
    spec, out = runner.RunSpec(method="cot", benchmark="gsm8k", limit=2, backend="scripted"), tmp_path / "run"
    assert runner.execute(spec, str(out), progress=False).n == 2

    def killed_after_one(run_dir, episodes, total, progress):
        run_dir.append(next(iter(episodes)))
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "drive", killed_after_one)
    with pytest.raises(KeyboardInterrupt):
        runner.execute(replace(spec, limit=4), str(out), progress=False)
    loaded = run_results.load_run(out)
    assert not (out / "summary.json").exists() and loaded.partial and loaded.summary.n == 3
    monkeypatch.undo()
    monkeypatch.setenv("DELIB_DATA_DIR", os.environ.get("DELIB_DATA_DIR") or str(data))
    RunDir(out).append(RunDir(out).episodes()[0])  # a second writer's duplicate
    assert runner.execute(replace(spec, limit=4), str(out), progress=False).n == 4


def test_a_finished_run_is_summarized_without_building_a_backend(tmp_path, monkeypatch):
    """Rerunning a finished run (a resumed experiment passes its done cells) loads no model."""
    from deliberation.runs import runner
    from deliberation.runs.runner import RunSpec, execute

    spec = RunSpec(method="cot", benchmark="gsm8k", limit=3, backend="scripted", command="test")
    first = execute(spec, str(tmp_path), progress=False)
    monkeypatch.setattr(runner, "make_backend", lambda *a, **k: pytest.fail("built a backend for a finished run"))
    assert execute(spec, str(tmp_path), progress=False) == first
    with pytest.raises(pytest.fail.Exception, match="finished run"):  # one more question: a backend again
        execute(replace(spec, limit=4), str(tmp_path), progress=False)


def test_resuming_with_other_resumable_settings_records_them(tmp_path):
    """An extension (--limit 4 after --limit 3) leaves its command in config.json; a rerun that adds no
    episode records nothing, even under another command."""
    import json

    from deliberation.runs.runner import RunSpec, execute

    spec = RunSpec(method="cot", benchmark="gsm8k", limit=3, backend="scripted", command="delib run --limit 3")
    execute(spec, str(tmp_path), progress=False)
    execute(spec, str(tmp_path), progress=False)
    execute(replace(spec, command="delib experiment x.toml"), str(tmp_path), progress=False)
    assert "resumes" not in json.loads((tmp_path / "config.json").read_text())
    execute(replace(spec, limit=4, command="delib run --limit 4"), str(tmp_path), progress=False)
    execute(replace(spec, limit=5, command="delib run --limit 5", concurrency=2), str(tmp_path), progress=False)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["limit"] == 3 and config["command"] == "delib run --limit 3"  # the first run's, kept
    assert config["resumes"] == [{"command": "delib run --limit 4", "limit": 4},
                                 {"command": "delib run --limit 5", "concurrency": 2, "limit": 5}]


def test_a_directory_without_episodes_takes_new_settings_and_prepare_writes_nothing(tmp_path):
    """A run that failed before its first episode (a server on the wrong port) never blocks the corrected
    command; ``prepare`` only checks, so a backend that fails to build after it leaves nothing behind."""
    RunDir.open(tmp_path / "run", {"method": "m", "backend": "openai"})
    RunDir.open(tmp_path / "run", {"method": "m", "backend": "scripted"}).append(episode(0))
    assert json.loads((tmp_path / "run" / "config.json").read_text())["backend"] == "scripted"
    with pytest.raises(DelibError, match="other settings"):
        RunDir.prepare(tmp_path / "run", {"method": "m", "backend": "openai"})
    RunDir.prepare(tmp_path / "new", {"method": "m"})
    assert not (tmp_path / "new").exists()
