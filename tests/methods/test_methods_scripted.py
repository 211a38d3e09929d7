"""Every method runs end to end on GSM8K with the scripted backend, through the CLI."""

import json

import pytest

from deliberation import benchmarks
from deliberation.cli.main import main
from registered_methods import AT_DEFAULTS
from deliberation.runs.directory import RunDir
from deliberation.actions import Action
from deliberation.types import to_json

BENCH = benchmarks.get("gsm8k")
GOLD = {ex.id: ex for ex in BENCH.load("test", limit=30)}


def run(tmp_path, method, *extra):
    out = tmp_path / method
    code = main(["run", "--method", method, "--benchmark", "gsm8k", "--backend", "scripted", "--limit", "30",
                 "--out", str(out), "--quiet", *extra])
    assert code == 0
    return out, json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("method", AT_DEFAULTS)
def test_method_runs_on_30_gsm8k_questions(tmp_path, method):
    out, summary = run(tmp_path, method)
    episodes = RunDir(out).episodes()
    assert summary["n"] == len(episodes) == 30 and summary["method"] == method
    assert summary["accuracy"] == sum(e.correct for e in episodes) / 30
    assert summary["completion_tokens"] == sum(t.completion_tokens for e in episodes for t in e.turns)
    assert summary["llm_calls"] == sum(e.llm_calls for e in episodes)
    for e in episodes:
        texts = {t.answer: t.text for t in e.turns}
        if e.final_answer is not None:
            assert e.correct == BENCH.score(GOLD[e.example_id], texts[e.final_answer])


def test_method_shapes(tmp_path):
    """cot uses one agent; self-consistency no rounds; debate regenerates every agent every round."""
    _, cot = run(tmp_path, "cot")
    assert cot["llm_calls"] == 30
    _, sc = run(tmp_path, "self-consistency")
    assert sc["llm_calls"] == 90 and sc["rounds_run_mean"] == 0
    _, debate = run(tmp_path, "debate")
    assert debate["llm_calls"] == 30 * 3 * 3 and debate["actions"][Action.REFINE.value] == 180
    _, persist = run(tmp_path, "always-persist", "--no-early-stop")
    assert persist["llm_calls"] == 90 and persist["actions"]["persist"] == 180


def test_rerun_skips_finished_and_is_reproducible(tmp_path):
    out, first = run(tmp_path, "mpdf")
    before = (out / "episodes.jsonl").read_text()
    _, again = run(tmp_path, "mpdf")
    assert (out / "episodes.jsonl").read_text() == before  # nothing redone
    other = tmp_path / "other"
    assert main(["run", "--method", "mpdf", "--backend", "scripted", "--limit", "30", "--out", str(other),
                 "--quiet"]) == 0
    strip = lambda p: [{**json.loads(x), "wall_seconds": 0} for x in (p / "episodes.jsonl").read_text().splitlines()]
    assert strip(out) == strip(other)
    assert first["accuracy"] == again["accuracy"]


@pytest.mark.parametrize("method", ["mpdf", "debate"])
def test_concurrent_questions_give_the_same_episodes(tmp_path, method):
    """The scripted backend answers a request the same in any batch, so --concurrency changes only the
    order episodes finish in; the summary is computed in dataset order."""
    alone, first = run(tmp_path / "1", method)
    together, second = run(tmp_path / "4", method, "--concurrency", "4")
    by_id = lambda p: {e.example_id: {**to_json(e), "wall_seconds": 0} for e in RunDir(p).episodes()}
    assert by_id(alone) == by_id(together)
    assert {k: v for k, v in first.items() if k != "wall_seconds"} == \
        {k: v for k, v in second.items() if k != "wall_seconds"}


def test_concurrency_merges_the_questions_requests_into_shared_batches():
    from deliberation.backends.scripted import ScriptedBackend
    from deliberation.benchmarks.answers import BenchmarkAnswers
    from functools import partial

    from deliberation.backends.concurrent import in_flight
    from deliberation.runs.runner import RunSpec, run_example
    from deliberation.methods import get

    inner = ScriptedBackend(benchmark="gsm8k", answers=BenchmarkAnswers)
    sizes = []
    original = inner.generate
    inner.generate = lambda requests: sizes.append(len(requests)) or original(requests)
    spec = RunSpec(method="self-consistency", backend="scripted", concurrency=3)
    one = partial(run_example, get("self-consistency"), spec)
    episodes = list(in_flight(one, list(GOLD.values())[:6], inner, spec.concurrency))
    assert len(episodes) == 6 and sum(sizes) == 18 and max(sizes) > 3  # more than one question per batch


def test_concurrency_below_one_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["run", "--method", "cot", "--backend", "scripted", "--out", str(tmp_path / "x"), "--concurrency", "0"])
    err = capsys.readouterr().err
    assert "at least 1" in err and "--help" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()
