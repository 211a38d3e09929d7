"""``delib optimize-graph`` asked again: over its finished graph (nothing to do, or refused: a graph runs used is
never replaced), and after an interruption (every call replayed from its response cache, the same graph)."""

from __future__ import annotations

import json
import shutil

import pytest

from deliberation.backends.scripted import ScriptedBackend
from deliberation.cli.main import main

pytestmark = pytest.mark.needs_split("gsm8k/train")  # graphs are optimised on GSM8K train questions
ASKED = ("--backend", "scripted", "--limit", "8", "--iterations", "3", "--rounds", "1")


def optimize(kind: str, out, *more: str) -> int:
    return main(["optimize-graph", "--method", kind, *ASKED, "--out", str(out), *more])


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = tmp_path_factory.mktemp("finished")
    for kind in ("gptswarm", "agentprune"):
        assert optimize(kind, root / kind, "--quiet") == 0
    return root


@pytest.mark.parametrize("kind", ["gptswarm", "agentprune"])
@pytest.mark.parametrize("changed, code, said", [
    ((), 0, "made before with these settings: nothing to do"),
    (("--concurrency", "2"), 0, "nothing to do"),  # how fast, not what is learned
    (("--cache", "none"), 0, "nothing to do"),  # where the calls are kept
    (("--iterations", "4"), 2, "holds a graph with other settings (steps 3 there, 4 here)"),
    (("--temperature", "0.3"), 2, "(engine.temperature 0.7 there, 0.3 here)"),
    (("--limit", "9"), 2, "settings.limit 8 there, 9 here"),
    (("--seed", "1"), 2, "engine.seed 0 there, 1 here")])
def test_an_optimisation_asked_again_over_its_graph_does_nothing_and_one_asked_otherwise_is_refused(
        finished, kind, changed, code, said, capsys):
    """A finished graph.json is what runs used: a rerun with its settings leaves it as it is (as after an
    interruption, without loading the model), one with other settings names them and overwrites nothing."""
    graph = finished / kind / "graph.json"
    before = graph.read_bytes()
    assert main(["optimize-graph", "--method", kind, *ASKED, *changed, "--out", str(finished / kind)]) == code
    out, err = capsys.readouterr()
    assert said in (out if code == 0 else err) and graph.read_bytes() == before


@pytest.mark.parametrize("version, code, said", [
    (None, 0, "nothing to do"),  # written before the version was recorded: version 1
    (1, 0, "nothing to do"),
    (2, 2, "holds a graph with other settings (version 2 there, 1 here); pass another --out, or delete it")])
def test_a_graph_of_another_optimiser_version_is_refused_and_one_from_before_versions_is_version_1(
        finished, tmp_path, version, code, said, capsys):
    raw = json.loads((finished / "gptswarm" / "graph.json").read_text())
    raw["record"].pop("version")
    if version is not None:
        raw["record"]["version"] = version
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "graph.json").write_text(json.dumps(raw))
    assert optimize("gptswarm", tmp_path / "g") == code
    out, err = capsys.readouterr()
    assert said in (out if code == 0 else err)


def test_a_file_in_the_way_is_named_with_the_fix_and_left_alone(finished, tmp_path, capsys):
    (tmp_path / "g").mkdir()
    shutil.copy(finished / "agentprune" / "graph.json", tmp_path / "g" / "graph.json")
    assert optimize("gptswarm", tmp_path / "g") == 2
    err = capsys.readouterr().err
    assert "is a agentprune graph, not gptswarm's, in the way of this command; pass another --out" in err
    assert err.strip().endswith("pass another --out, or delete it to optimise again") and "\n" not in err.strip()
    assert (tmp_path / "g" / "graph.json").read_bytes() == (finished / "agentprune" / "graph.json").read_bytes()


def test_a_rerun_retraces_the_same_steps_from_the_cache(finished, tmp_path, capsys, monkeypatch):
    """An optimisation interrupted before its graph.json (here: its response cache alone, in a new folder)
    replays every call from the cache (the model is never asked) and learns the same graph."""
    graph = json.loads((finished / "agentprune" / "graph.json").read_text())
    (tmp_path / "again").mkdir()
    shutil.copy(finished / "agentprune" / "responses.sqlite", tmp_path / "again" / "responses.sqlite")

    def uncached(self, requests):
        assert not requests, "a call the response cache should have served"
        return []

    monkeypatch.setattr(ScriptedBackend, "generate", uncached)
    assert optimize("agentprune", tmp_path / "again") == 0
    again = json.loads((tmp_path / "again" / "graph.json").read_text())
    learned = ("spatial_logits", "spatial_mask", "temporal_logits", "temporal_mask")
    assert [again[k] for k in learned] == [graph[k] for k in learned]
    assert again["record"]["tokens"] == graph["record"]["tokens"]
    bar = capsys.readouterr().err.split("\r")[-1]  # the progress bar's last state: every step, every graph run
    assert bar.startswith("agentprune: 100%") and "3/3" in bar
    assert f"/12, generated={graph['record']['tokens']['completion_tokens']:,}]" in bar
    assert sum(graph["spatial_mask"]) == 6 - 2 and sum(graph["temporal_mask"]) == 9 - 2  # 25% pruned once
    assert graph["record"]["tokens"]["graph_runs"] == 12 and len(graph["record"]["questions"]["ids"]) == 8
