"""Run directory: durable appends, torn lines, Wilson interval."""

import inspect
import json
from dataclasses import replace

import pytest

from deliberation.backends.base import SPEED_OPTIONS
from deliberation.errors import DelibError
from deliberation.runs.directory import RunDir, summarize, wilson_ci
from deliberation.runs.run_config import RunSpec
from deliberation.actions import Action
from deliberation.types import Episode, Turn, to_json


def episode(i, correct=True):
    turn = Turn(0, 0, None, "1", "text", 0.5, 10, 5, 1, False, correct)
    return Episode(f"ex{i}", "m", "1", correct, (turn, Turn(0, 1, Action.PERSIST, "1", "text", 0.5)), 1, 0.1)


RECORDED = to_json(RunSpec(method="m"))
"""config.json of a run of method m as a run records it, for the tests that report on one (a report reads every
setting a run records)."""


def write(path, config, *episodes):
    """Append ``episodes`` to the run directory ``path`` as a run of ``config`` does, then stop writing it."""
    with RunDir.open(path, config) as run:
        for ep in episodes:
            run.append(ep)


def test_append_and_read_back(tmp_path):
    write(tmp_path, {"method": "m"}, *(episode(i, correct=i != 1) for i in range(3)))
    run = RunDir(tmp_path)
    assert run.episodes() == [episode(0), episode(1, False), episode(2)]
    assert run.finished_ids() == {"ex0", "ex1", "ex2"}


def test_unicode_line_separators_inside_a_response_do_not_split_the_episode(tmp_path):
    """json.dumps(ensure_ascii=False) leaves U+2028 and U+0085 raw; str.splitlines would break there."""
    from dataclasses import replace

    from deliberation.report.loading import read_episodes

    ep = episode(0)
    ep = replace(ep, turns=(replace(ep.turns[0], text="a\u2028b\x85c\u2029d"), *ep.turns[1:]))
    write(tmp_path, {"method": "m"}, ep, episode(1))
    run = RunDir(tmp_path)
    assert run.episodes() == [ep, episode(1)] and read_episodes(tmp_path / "episodes.jsonl") == [ep, episode(1)]
    assert "\u2028" in (tmp_path / "episodes.jsonl").read_text()  # written raw, read back whole


def test_torn_last_line_is_dropped(tmp_path):
    write(tmp_path, {"method": "m"}, episode(0))
    with open(tmp_path / "episodes.jsonl", "a") as f:
        f.write('{"example_id": "ex1", "meth')
    assert RunDir(tmp_path).finished_ids() == {"ex0"}
    write(tmp_path, {"method": "m"}, episode(2))  # the next run cuts the torn line before appending
    assert [e.example_id for e in RunDir(tmp_path).episodes()] == ["ex0", "ex2"]


def test_checking_a_directory_writes_nothing(tmp_path):
    """``prepare`` and reading only read: a line being written by a live run is not cut from under it."""
    write(tmp_path, {"method": "m"}, episode(0))
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


@pytest.mark.parametrize("k, n", [(0, 1), (1, 1), (0, 10), (3, 7), (10, 10), (29, 30), (500, 1000)])
def test_wilson_ci_equals_scipys(k, n):
    """scipy's Wilson interval (no continuity correction), at the confidence whose z is exactly 1.96."""
    from scipy.stats import binomtest, norm

    ci = binomtest(k, n).proportion_ci(confidence_level=2 * norm.cdf(1.96) - 1, method="wilson")
    assert wilson_ci(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)


@pytest.mark.parametrize("k, n, low, high", [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605),
                                             (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718)])
def test_wilson_ci_equals_the_published_examples(k, n, low, high):
    """The score interval of the worked examples in R. G. Newcombe, Two-sided confidence intervals for the
    single proportion: comparison of seven methods, Statistics in Medicine 17 (1998) 857-872, to its 4 places."""
    assert wilson_ci(k, n) == pytest.approx((low, high), abs=5e-5)


def test_resume_accepts_other_thread_count_and_cache_path(tmp_path):
    first = {"method": "m", "cache": "a.sqlite", "backend_options": {"model": "x", "n_threads": 1}}
    write(tmp_path, first, episode(0))
    write(tmp_path, {"method": "m", "cache": "b.sqlite", "backend_options": {"model": "x"}}, episode(1))
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["cache"] == "a.sqlite" and config["resumes"] == [{"cache": "b.sqlite"}]


@pytest.mark.parametrize("option", sorted(SPEED_OPTIONS))
def test_a_run_stopped_by_a_slow_server_resumes_with_other_timeouts_and_retries(tmp_path, option):
    """The HTTP backend's message on a timed-out request asks for a longer timeout_s (or total_timeout_s, more
    retries): the run must resume under it. A setting of the output (the sampling) still refuses."""
    first = {"method": "m", "backend_options": {"model": "x", "base_url": "http://h/v1", option: 1}}
    write(tmp_path, first, episode(0))
    write(tmp_path, {"method": "m", "backend_options": {"model": "x", "base_url": "http://h/v1", option: 30}},
          episode(1))
    with pytest.raises(DelibError, match="top_p"):
        write(tmp_path, {"method": "m", "backend_options": {"model": "x", "base_url": "http://h/v1", "top_p": 0.5}},
              episode(2))


def test_every_speed_option_is_an_option_of_a_registered_backend():
    from deliberation.backends import BACKENDS

    taken = set()
    for name in BACKENDS:
        taken |= set(inspect.signature(BACKENDS.resolve(name).__init__).parameters)
    assert SPEED_OPTIONS <= taken


def test_a_run_recorded_before_confidence_threshold_existed_resumes_at_its_default(tmp_path):
    old = {"method": "confidence-threshold", "backend_options": {}}
    write(tmp_path, old, episode(0))
    write(tmp_path, {**old, "confidence_threshold": 0.7})
    with pytest.raises(DelibError, match=r"other settings \(confidence_threshold 0.7 there, 0.9 here\)"):
        RunDir.open(tmp_path, {**old, "confidence_threshold": 0.9})


def test_resume_refuses_another_model_or_temperature(tmp_path):
    write(tmp_path, {"method": "m", "backend_options": {"model": "x"}, "engine": {"temperature": 0.7}}, episode(0))
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

    append = RunDir.append

    def killed_after_one(run_dir, episode):  # Ctrl-C right after the extension's first episode is kept
        append(run_dir, episode)
        raise KeyboardInterrupt

    monkeypatch.setattr(RunDir, "append", killed_after_one)
    with pytest.raises(KeyboardInterrupt):
        runner.execute(replace(spec, limit=4), str(out), progress=False)
    loaded = run_results.load_run(out)
    assert not (out / "summary.json").exists() and loaded.partial and loaded.summary.n == 3
    monkeypatch.undo()
    monkeypatch.setenv("DELIB_DATA_DIR", os.environ.get("DELIB_DATA_DIR") or str(data))
    with open(out / "episodes.jsonl", "a") as f:  # a duplicate, as two runs writing at once left them
        f.write((out / "episodes.jsonl").read_text().splitlines()[0] + "\n")
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


@pytest.mark.needs_split("gsm8k/test")
def test_a_rerun_asking_fewer_questions_says_its_summary_counts_them_all(tmp_path, caplog):
    """summary.json describes episodes.jsonl whole, so a rerun with a smaller --limit reports the earlier
    questions too: said in a note, not silently."""
    from deliberation.runs.runner import RunSpec, execute

    spec = RunSpec(method="cot", benchmark="gsm8k", limit=3, backend="scripted", command="test")
    execute(spec, str(tmp_path), progress=False)
    assert "did not ask for" not in caplog.text
    assert execute(replace(spec, limit=2), str(tmp_path), progress=False).n == 3
    assert f"{tmp_path} also holds 1 questions this command did not ask for" in caplog.text


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
    write(tmp_path / "run", {"method": "m", "backend": "openai"})
    write(tmp_path / "run", {"method": "m", "backend": "scripted"}, episode(0))
    assert json.loads((tmp_path / "run" / "config.json").read_text())["backend"] == "scripted"
    with pytest.raises(DelibError, match="other settings"):
        RunDir.prepare(tmp_path / "run", {"method": "m", "backend": "openai"})
    RunDir.prepare(tmp_path / "new", {"method": "m"})
    assert not (tmp_path / "new").exists()


def test_a_duplicated_episode_line_counts_once_with_one_warning_naming_the_file(tmp_path, caplog):
    """Two runs that wrote one directory at once (before writers locked it) left questions twice: each counts
    once everywhere episodes are read, and the file is named in one warning however often it is read."""
    from deliberation.report.loading import load_run, read_episodes

    write(tmp_path, RECORDED, episode(0), episode(1, correct=False))
    path = tmp_path / "episodes.jsonl"
    path.write_text(path.read_text() * 2)
    loaded = load_run(tmp_path)
    assert loaded.summary.n == 2 and loaded.summary.accuracy == 0.5 and loaded.actions_by_round == ((2, 0, 0),)
    assert read_episodes(path) == RunDir(tmp_path).episodes() == [episode(0), episode(1, False)]
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and str(path) in warned[0] and "2 duplicate" in warned[0]


@pytest.mark.parametrize("damage", [
    {"correct": "yes"},  # summing it raised TypeError in the report
    {"turns": [{"agent": 0, "round": 0, "action": None, "answer": "1", "text": "t", "confidence": None,
                "prompt_tokens": "10"}]},
])
def test_an_episode_of_the_wrong_shape_is_refused_by_file_and_line(tmp_path, capsys, damage):
    from deliberation.cli.main import main
    from deliberation.types import to_json

    write(tmp_path / "run", RECORDED, episode(0))
    with open(tmp_path / "run" / "episodes.jsonl", "a") as f:
        f.write(json.dumps({**to_json(episode(1)), **damage}) + "\n")
    assert main(["report", str(tmp_path / "run"), "--out", str(tmp_path / "report")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{tmp_path / 'run' / 'episodes.jsonl'} line 2 is not an episode" in err


def test_a_rerun_with_a_smaller_limit_keeps_summarizing_every_episode(tmp_path):
    """summary.json describes the episodes on disk: a rerun with --limit 1 after --limit 4 used to rewrite it
    to n = 1 beside 4 episodes. A summary.json written that way is summarized afresh by reports."""
    from deliberation.report.loading import load_run
    from deliberation.runs.runner import RunSpec, execute
    from deliberation.types import to_json

    spec = RunSpec(method="cot", benchmark="gsm8k", limit=4, backend="scripted")
    assert execute(spec, str(tmp_path), progress=False).n == 4
    assert execute(replace(spec, limit=1), str(tmp_path), progress=False).n == 4
    assert json.loads((tmp_path / "summary.json").read_text())["n"] == 4
    stale = summarize(RunDir(tmp_path).episodes()[:1], "cot", "gsm8k", "test")
    (tmp_path / "summary.json").write_text(json.dumps(to_json(stale)))
    assert load_run(tmp_path).summary.n == 4
