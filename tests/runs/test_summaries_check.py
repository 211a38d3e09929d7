"""A method that reads log-probability summaries (CISC by log-probability, a policy with the ``signals``
features) is refused on a backend that records none with its options, instead of running without them
(a CISC vote by log-probability silently becoming a plain vote); replays read what their store holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from deliberation import methods
from deliberation.backends import records_summaries
from deliberation.cli.main import main
from deliberation.methods.base import MethodConfig

OPENAI = ["--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"]


@pytest.mark.parametrize("backend, options, records", [
    ("llamacpp", {}, True), ("hf", {"model": "folder"}, True), ("scripted", {}, True),
    ("openai", {"model": "m"}, False), ("openai", {"model": "m", "summaries": True}, True),
    ("openai", {"model": "m", "summaries": True, "supports_logprobs": False}, False),
])
def test_each_backend_says_whether_it_records_summaries_before_loading(backend, options, records):
    assert records_summaries(backend, options) is records


def test_a_team_records_them_when_every_member_does(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    local = {"backend": "llamacpp", "model": str(gguf)}
    served = {"backend": "openai", "model": "b", "base_url": "http://127.0.0.1:9/v1"}
    assert records_summaries("team", {"members": [local, {"backend": "hf", "model": str(tmp_path)}]})
    assert not records_summaries("team", {"members": [local, served]})
    assert records_summaries("team", {"members": [local, {**served, "summaries": True}]})


def test_the_methods_that_read_summaries_are_known_from_their_spec():
    reads = {name: methods.get(name).spec(MethodConfig()).reads_summaries for name in ("cisc", "cisc-logprob",
                                                                                       "self-consistency", "mpdf")}
    assert reads == {"cisc": False, "cisc-logprob": True, "self-consistency": False, "mpdf": False}


def test_a_live_run_of_cisc_logprob_on_a_backend_without_summaries_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--method", "cisc-logprob", *OPENAI, "--limit", "1", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "cisc-logprob reads each answer's token log-probability summary, which backend openai does not record" in err
    assert "--backend-opt summaries=true" in err and len(err.splitlines()) == 1
    assert not out.exists()


@pytest.mark.needs_split("gsm8k/train")
def test_a_signals_policy_is_refused_live_without_summaries_and_replays_from_a_store(tmp_path, capsys):
    store, policy = tmp_path / "store", tmp_path / "policy"
    assert main(["tree", "--backend", "scripted", "--split", "train", "--limit", "4", "--methods", "mpdf",
                 "--out", str(store), "--quiet"]) == 0
    assert main(["train", "--algo", "sft", "--trees", str(store), "--features", "signals", "--epochs", "1",
                 "--out", str(policy)]) == 0
    checkpoint = str(policy / "policy.pt")
    assert methods.get("mpdf").spec(MethodConfig(policy=checkpoint)).reads_summaries
    live = ["run", "--method", "mpdf", "--policy", checkpoint, *OPENAI, "--split", "train", "--limit", "1",
            "--out", str(tmp_path / "live"), "--quiet"]
    assert main(live) == 2 and "backend openai does not record" in capsys.readouterr().err
    assert not (tmp_path / "live").exists()
    other = tmp_path / "other"  # questions the policy did not train on
    assert main(["tree", "--backend", "scripted", "--split", "train", "--offset", "4", "--limit", "4", "--methods",
                 "mpdf", "--out", str(other), "--quiet"]) == 0
    assert main(["evaluate", "--trees", str(other), "--method", "mpdf", "--policy", checkpoint, "--rounds", "1",
                 "--offline", "--out", str(tmp_path / "replay"), "--quiet"]) == 0
    assert Path(tmp_path / "replay" / "episodes.jsonl").read_text().count("\n") == 4


def test_scripted_answers_carry_summaries_that_track_correctness():
    """The simulator's summaries are what CISC by log-probability and the signals features read in tests:
    right answers' mean log-probability is higher on average, and every summary fits its text."""
    from deliberation.benchmarks.answers import make_backend
    from deliberation.benchmarks import get
    from deliberation.types import GenerationRequest, Message, Purpose, RequestKind

    bench = get("gsm8k")
    examples = bench.load("test", limit=40)
    backend = make_backend("scripted", benchmark="gsm8k")
    means: dict[bool, list[float]] = {True: [], False: []}
    for ex in examples:
        question = bench.format_question(ex)
        request = GenerationRequest(messages=(Message("user", question),), max_tokens=512, temperature=0.7, seed=1,
                                    purpose=Purpose(RequestKind.ANSWER, ex.id, question, 0))
        out = backend.generate([request])[0]
        assert out.summary is not None and out.summary.tail_bounds[-1] == len(out.text)
        means[bench.score(ex, out.text)].append(out.summary.mean)
    assert means[True] and means[False] and sum(means[True]) / len(means[True]) > sum(means[False]) / len(
        means[False]) + 0.1


@pytest.mark.parametrize("installed, summaries, records", [(None, True, False), ("0.9.2", True, False),
                                                           ("0.10.1", True, True), ("0.11.0", False, False)])
def test_vllm_records_them_from_its_version_without_importing_it(monkeypatch, installed, summaries, records):
    """vLLM from 0.10 reports raw log-probabilities (its summaries' definition); the version is read from the
    installed package's metadata, so the check needs no GPU and no import."""
    import importlib.metadata

    def version(name: str) -> str:
        if installed is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return installed

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert records_summaries("vllm", {"model": "m", "summaries": summaries}) is records
