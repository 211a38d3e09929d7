"""Every method on a few GSM8K questions with the real llama.cpp backend and smollm2-135m.

Plumbing with a real model: the numbers are not results (the model is tiny); the test checks that real
generations flow through every method with correct accounting, and that the shared response cache
serves round 0 once across methods.
"""

import json

import pytest

from deliberation import methods
from deliberation.cli.main import main
from registered_methods import FROM_TREES
from deliberation.runs.directory import RunDir

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, smollm2_path):
    return tmp_path_factory.mktemp("llamacpp-methods")


def run(out, method, cache):
    return main(["run", "--method", method, "--benchmark", "gsm8k", "--limit", "2", "--backend", "llamacpp",
                 "--model", "smollm2-135m", "--max-tokens", "48", "--rounds", "1", "--out", str(out),
                 "--cache", str(cache), "--quiet"])


@pytest.mark.parametrize("method", [pytest.param(m, marks=pytest.mark.slow) if methods.get(m).hindsight else m
                                    for m in FROM_TREES])  # the oracle plays 27 candidates a question: slow
def test_method_with_smollm2(workdir, method):
    out = workdir / method
    assert run(out, method, workdir / "responses.sqlite") == 0
    summary = json.loads((out / "summary.json").read_text())
    episodes = RunDir(out).episodes()
    assert summary["n"] == 2 and summary["completion_tokens"] > 0
    assert summary["completion_tokens"] == sum(t.completion_tokens for e in episodes for t in e.turns)
    assert all(t.text for e in episodes for t in e.turns)
    assert {t.round for e in episodes for t in e.turns} <= {0, 1}


def test_round_0_is_served_from_the_cache_to_a_second_method(tmp_path, smollm2_path):
    """Round 0 is every method's round 0: after self-consistency, always-persist generates nothing new."""
    assert run(tmp_path / "sc", "self-consistency", tmp_path / "own.sqlite") == 0
    assert not any(t.cached for e in RunDir(tmp_path / "sc").episodes() for t in e.turns)
    assert run(tmp_path / "persist", "always-persist", tmp_path / "own.sqlite") == 0
    assert all(t.cached for e in RunDir(tmp_path / "persist").episodes() for t in e.turns if t.round == 0)
