"""The RESAMPLE action: an agent's k-th RESAMPLE is the round-0 request of sample k * N + i, so a
tree store with 2N round-0 samples serves every agent's first one offline, replays equal online runs, and
the paper's three-action methods are untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliberation.benchmarks import get as get_benchmark
from deliberation.cli.main import main
from deliberation.config import EngineConfig
from deliberation.engine.loop import act, initial_round, make_context, resample_agent
from deliberation.backends.scripted import ScriptedBackend
from deliberation.benchmarks.answers import BenchmarkAnswers
from deliberation.engine.spec import MethodSpec
from deliberation.policy.rules import ConstantPolicy
from deliberation.actions import Action
from replays import episodes

QUESTIONS = 11  # agreement-resample resamples lone answers only: questions 8 and 10 have one


def test_the_kth_resample_of_agent_i_is_sample_k_n_plus_i():
    assert [resample_agent(3, i, 0) for i in range(3)] == [3, 4, 5]
    assert [resample_agent(3, i, 1) for i in range(3)] == [6, 7, 8]


def test_a_resample_answers_as_self_consistency_sample_n_plus_i():
    bench = get_benchmark("gsm8k")
    example = bench.load("test", 1)[0]
    backend = ScriptedBackend("gsm8k", answers=BenchmarkAnswers)
    spec = MethodSpec("r", ConstantPolicy(Action.RESAMPLE), confidence=True)
    ctx = make_context(example, backend, bench, EngineConfig(agents=3), spec)
    records, _ = initial_round(ctx)
    first = act(ctx, records, [Action.RESAMPLE, Action.PERSIST, Action.RESAMPLE], 1)
    second = act(ctx, first.records, [Action.RESAMPLE] * 3, 2)
    wide = make_context(example, backend, bench, EngineConfig(agents=9), MethodSpec("sc", None))
    samples, _ = initial_round(wide)
    assert [r.text for r in first.records] == [samples[3].text, records[1].text, samples[5].text]
    assert [r.resamples for r in first.records] == [1, 0, 1]
    assert [r.text for r in second.records] == [samples[6].text, samples[4].text, samples[8].text]
    assert all(len(calls) == 2 for i, calls in enumerate(first.calls) if i != 1)  # the call and its critic
    assert first.calls[1] == []


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("resample") / "store"
    assert main(["tree", "--backend", "scripted", "--limit", str(QUESTIONS), "--samples", "6", "--methods", "mpdf",
                 "--out", str(out), "--quiet"]) == 0
    return out


@pytest.mark.parametrize("method", ["always-resample", "agreement-resample"])
def test_resample_rules_replay_offline_as_online(store, tmp_path, method):
    replay, run = tmp_path / "replay", tmp_path / "run"
    assert main(["evaluate", "--trees", str(store), "--method", method, "--rounds", "1", "--offline", "--quiet",
                 "--out", str(replay)]) == 0
    assert main(["run", "--method", method, "--backend", "scripted", "--limit", str(QUESTIONS), "--rounds", "1",
                 "--quiet", "--out", str(run)]) == 0
    assert episodes(replay) == episodes(run)
    assert json.loads((run / "summary.json").read_text())["actions"]["resample"] > 0  # both rules resample here


def test_a_second_resample_is_not_in_a_store_of_2n_samples(store, tmp_path, capsys):
    assert main(["evaluate", "--trees", str(store), "--method", "always-resample", "--rounds", "2",
                 "--no-early-stop", "--offline", "--quiet", "--out", str(tmp_path / "r")]) == 2
    assert "has no answer node" in capsys.readouterr().err


def test_three_action_summaries_keep_their_keys(tmp_path):
    assert main(["run", "--method", "agreement-threshold", "--backend", "scripted", "--limit", "2", "--quiet",
                 "--out", str(tmp_path / "r")]) == 0
    assert set(json.loads((tmp_path / "r" / "summary.json").read_text())["actions"]) == {"persist", "refine",
                                                                                          "concede"}
