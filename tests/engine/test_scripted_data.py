"""The scripted simulator reads only the data a run uses: with a data folder that holds GSM8K test alone (as a
machine with the data packages but no data folder has), a GSM8K run works and reads no other split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliberation import benchmarks
from deliberation.benchmarks.helpers import sources
from deliberation.backends.scripted import ScriptedBackend
from deliberation.benchmarks.answers import BenchmarkAnswers
from deliberation.errors import DelibError
from deliberation.runs.runner import RunSpec, execute
from deliberation.types import GenerationRequest, Message, Purpose, RequestKind

QUESTIONS = [("What is 2 + 3?", "5"), ("What is 7 * 6?", "42"), ("What is 10 - 4?", "6")]


@pytest.fixture
def gsm8k_test_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """A data folder with gsm8k/test.jsonl and nothing else, the hub off, a fresh set of opened benchmarks,
    and a record of every (benchmark, split) loaded."""
    folder = tmp_path / "data" / "gsm8k"
    folder.mkdir(parents=True)
    rows = [{"id": f"gsm8k/test/{i}", "question": q, "answer": a} for i, (q, a) in enumerate(QUESTIONS)]
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    monkeypatch.setenv("DELIB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(benchmarks, "_OPEN", {})
    loaded: list[tuple[str, str]] = []
    real_load = sources.load

    def recording_load(bench: str, split: str, *args: object, **kwargs: object) -> list:
        loaded.append((bench, split))
        return real_load(bench, split, *args, **kwargs)

    monkeypatch.setattr(sources, "load", recording_load)
    return loaded


@pytest.mark.parametrize("given", [None, "gsm8k"])
def test_a_gsm8k_run_reads_gsm8k_test_and_nothing_else(given: str | None, gsm8k_test_only: list,
                                                       tmp_path: Path) -> None:
    spec = RunSpec(method="debate", benchmark="gsm8k", split="test", limit=3, backend="scripted",
                   backend_options={"benchmark": given} if given else {})
    summary = execute(spec, str(tmp_path / "run"), progress=False)
    assert summary.n == len(QUESTIONS)
    assert set(gsm8k_test_only) == {("gsm8k", "test")}


def test_a_question_found_nowhere_names_the_data_that_could_not_be_loaded(gsm8k_test_only: list) -> None:
    backend = ScriptedBackend(answers=BenchmarkAnswers)
    mars = "What is the capital of Mars?"
    request = GenerationRequest((Message("user", mars),), max_tokens=64,
                                purpose=Purpose(RequestKind.ANSWER, "mars", mars, 0))
    with pytest.raises(DelibError, match="not about a question of .*could not be loaded: aime24 split 'test'"):
        backend.generate([request])
