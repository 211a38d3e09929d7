"""The paper's other baselines on the real llama.cpp backend and smollm2-135m: PHP, AFlow's two transferred
workflows (their Programmer runs the model's code in the sandbox) and the two learned graphs (optimised on the
scripted backend: a graph file is the same whatever backend learned it).

Plumbing with a real model, as ``test_methods_llamacpp.py`` for the methods a tree store replays: these send
requests of their own (hints, roles, workflow prompts), so no store-backed test reaches their real-model path.
The numbers are not results; the test checks that real generations flow through with exact accounting.
"""

import json
import sqlite3

import pytest

from deliberation.cli.main import main
from deliberation.runs.directory import RunDir

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # a minute of real generation: `make test-slow`


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    """A GPTSwarm and an AgentPrune graph of 3 agents, optimised for one step on the scripted backend."""
    root = tmp_path_factory.mktemp("graphs")
    for kind in ("gptswarm", "agentprune"):
        assert main(["optimize-graph", "--method", kind, "--backend", "scripted", "--split", "train", "--limit", "4",
                     "--iterations", "1", "--rounds", "1", "--out", str(root / kind)]) == 0
    return root


def run(method: str, graph: list[str], out, cache) -> dict:
    assert main(["run", "--method", method, *graph, "--benchmark", "gsm8k", "--limit", "1", "--backend", "llamacpp",
                 "--model", "smollm2-135m", "--max-tokens", "32", "--out", str(out), "--cache", str(cache),
                 "--quiet"]) == 0
    return json.loads((out / "summary.json").read_text())


@pytest.mark.needs_split("gsm8k/train")  # the graphs are optimised on GSM8K train questions
@pytest.mark.parametrize("method", ["php", "aflow-gsm8k", "aflow-math", "gptswarm", "agentprune"])
def test_baseline_with_smollm2(tmp_path, smollm2_path, graphs, method):
    """Every call is a request of its own, generated once and counted once; a rerun from the response cache
    generates nothing and answers alike."""
    graph = ["--graph", str(graphs / method / "graph.json")] if method in ("gptswarm", "agentprune") else []
    graph += ["--php-max-calls", "3"] if method == "php" else []  # the tiny model rarely agrees with itself
    cache = tmp_path / "responses.sqlite"
    summary = run(method, graph, tmp_path / "live", cache)
    turns = [t for e in RunDir(tmp_path / "live").episodes() for t in e.turns]
    with sqlite3.connect(cache) as db:
        generated = db.execute("SELECT COUNT(*) FROM completions").fetchone()[0]
    assert summary["n"] == 1 and summary["llm_calls"] == generated > 0 and not any(t.cached for t in turns)
    assert summary["completion_tokens"] == sum(t.completion_tokens for t in turns) > 0
    again = run(method, graph, tmp_path / "cached", cache)
    replayed = [t for e in RunDir(tmp_path / "cached").episodes() for t in e.turns]
    assert all(t.cached for t in replayed) and [t.text for t in replayed] == [t.text for t in turns]
    assert again["accuracy"] == summary["accuracy"] and again["completion_tokens"] == summary["completion_tokens"]
