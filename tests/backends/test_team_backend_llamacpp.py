"""A mixed team on the real llama.cpp backend with smollm2-135m (plumbing; the numbers are not results).

Agents 0 and 2 name the same catalogue model and share one loaded instance; agent 1 is the same GGUF under
another name (its path), so another member, loaded apart and cached under its own scope. Round 0 of agents
0 and 2 is the cache entry a run of smollm2 alone wrote (same request, same seed); agent 1's is not.
"""

from __future__ import annotations

import functools
import json

import pytest

from deliberation.backends.llamacpp import LlamaCppBackend
from deliberation.cli.main import main
from deliberation.runs.directory import RunDir

pytestmark = pytest.mark.integration


def test_a_team_loads_a_model_named_twice_once_and_hits_its_cache(tmp_path, smollm2_path, monkeypatch):
    loads: list[str] = []
    load = LlamaCppBackend.__init__

    @functools.wraps(load)
    def counted(self, model="qwen2.5-coder-1.5b", **options):
        loads.append(str(model))
        load(self, model, **options)

    monkeypatch.setattr(LlamaCppBackend, "__init__", counted)
    common = ["--benchmark", "gsm8k", "--limit", "1", "--backend", "llamacpp", "--backend-opt", "n_ctx=2048",
              "--max-tokens", "32", "--cache", str(tmp_path / "responses.sqlite"), "--quiet"]
    assert main(["run", "--method", "self-consistency", "--model", "smollm2-135m", "--out", str(tmp_path / "alone"),
                 *common]) == 0
    loads.clear()
    team = f"smollm2-135m,{smollm2_path},smollm2-135m"
    assert main(["run", "--method", "debate", "--rounds", "1", "--team", team, "--out", str(tmp_path / "mixed"),
                 *common]) == 0
    assert loads == ["smollm2-135m", str(smollm2_path)]

    turns = [t for e in RunDir(tmp_path / "mixed").episodes() for t in e.turns]
    round0 = {t.agent: t for t in turns if t.round == 0}
    alone = {t.agent: t.text for e in RunDir(tmp_path / "alone").episodes() for t in e.turns}
    assert round0[0].cached and round0[2].cached and not round0[1].cached
    assert (round0[0].text, round0[2].text) == (alone[0], alone[2])
    assert len(turns) == 6 and all(t.completion_tokens > 0 for t in turns)
    by_model = json.loads((tmp_path / "mixed" / "summary.json").read_text())["tokens_by_model"]
    assert by_model["smollm2-135m"]["completion_tokens"] == sum(t.completion_tokens for t in turns if t.agent != 1)
    assert by_model[str(smollm2_path)]["completion_tokens"] == sum(t.completion_tokens for t in turns if t.agent == 1)
