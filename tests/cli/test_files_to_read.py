"""Files a user names to be read (a graph, a searched workflow, a checkpoint, a tree store, a benchmark file):
an empty name, nothing there, a folder given for the file it holds (named, so the fix is one copy away), the
file given for its folder, and a damaged file are each one ``delib: error:`` line that names the problem and
the fix, never a traceback or a run on a half-read file."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from deliberation.config import learned_ids
from deliberation.errors import DelibError, existing
from deliberation.protocols.designs import GRAPH_FILE, initial, load_graph, save_graph
from deliberation.protocols.workflow import TRANSFERRED, WORKFLOW_FILE, WORKFLOW_FORMAT, load_searched

RECORD = {"questions": {"benchmark": "gsm8k", "split": "train", "ids": ["gsm8k/train/0"]}}
FIX = "optimise one with `delib optimize-graph --method gptswarm`"


@pytest.fixture
def graph(tmp_path) -> Path:
    """A GPTSwarm graph of 3 agents as `delib optimize-graph` writes it, every edge kept."""
    made = initial("gptswarm", 3, 1)
    (tmp_path / "g").mkdir()
    save_graph(tmp_path / "g" / GRAPH_FILE, replace(made, spatial_logits=(1.0,) * len(made.spatial), record=RECORD))
    return tmp_path / "g" / GRAPH_FILE


def test_existing_names_each_problem_and_the_fix(here):
    (here / "afolder" / "x.pt").write_text("")
    assert existing("afile", "thing", "fix it") == Path("afile")
    assert existing("afolder", "store", "fix it", folder=True) == Path("afolder")
    cases = [(("", "thing", "fix it"), {}, "the thing's path is empty; fix it"),
             (("nowhere", "thing", "fix it"), {}, "thing nowhere not found; fix it"),
             (("afolder", "thing", "fix it"), {"inside": "*.pt"}, "thing afolder is a folder, not a file; pass the "
                                                                  "file in it, afolder/x.pt"),
             (("afolder", "thing", "fix it"), {"inside": "*.json"}, "thing afolder is a folder, not a file; fix it"),
             (("afile", "store", "fix it"), {"folder": True, "inside": "afile"}, "store afile is a file, not a "
                                                                                  "folder; pass its folder, ."),
             (("afile", "store", "fix it"), {"folder": True}, "store afile is a file, not a folder; fix it")]
    for args, options, message in cases:
        with pytest.raises(DelibError) as found:
            existing(*args, **options)
        assert str(found.value) == message


def test_a_graph_as_written_loads_with_the_questions_it_learned_from(graph):
    assert load_graph(str(graph), "gptswarm").trained_on() == {"gsm8k/train/0"} and learned_ids(RECORD)


def damaged(raw: dict, case: str) -> str:
    """The text of the graph ``raw`` damaged as ``case`` says."""
    changes = {"mask cut": {"spatial_mask": [True]}, "edge to no agent": {"spatial": [[0, 7], *raw["spatial"][1:]]},
               "agents as text": {"agents": "three"}, "more agents than edges": {"agents": 10 ** 9},
               "unknown kind": {"kind": "dylan"}, "no rounds": {"rounds": 0}, "null agents": {"agents": None},
               "rounds beyond reason": {"rounds": 10 ** 9},
               "null logit": {"spatial_logits": [None, *raw["spatial_logits"][1:]]},
               "null mask entry": {"spatial_mask": [None, *raw["spatial_mask"][1:]]},
               "tokens as text": {"record": {**raw["record"], "tokens": {"prompt_tokens": "many",
                                                                         "completion_tokens": 3}}}}
    if case in changes:
        return json.dumps({**raw, **changes[case]})
    if case in ("no record", "no format"):
        return json.dumps({k: v for k, v in raw.items() if k != case.split()[1]})
    spelled = {"NaN logit": "NaN", "overflowing logit": "1e999"}
    if case in spelled:
        return json.dumps({**raw, "spatial_logits": ["@", *raw["spatial_logits"][1:]]}).replace('"@"', spelled[case])
    return {"a list": "[1, 2]", "not JSON": json.dumps(raw)[:40]}[case]


@pytest.mark.parametrize("case, message", [
    ("mask cut", "9 spatial edges, 9 logits and 1 mask entries"),
    ("edge to no agent", "its spatial is not that of a gptswarm graph of 3 agents"),
    ("agents as text", "Graph.agents: a JSON text where a int belongs"),
    ("more agents than edges", "1000000000 agents and 1 rounds are more than its 9 spatial edges make"),
    ("unknown kind", "its kind 'dylan' is none of gptswarm, agentprune"),
    ("no rounds", "its agents (3) and rounds (0) are not both whole numbers from 1"),
    ("null agents", "its agents (None) and rounds (1) are not both whole numbers from 1"),
    ("rounds beyond reason", "or than 100 rounds"),
    ("null logit", "a spatial logit is not a finite number"),
    ("null mask entry", "a spatial mask entry is not true or false"),
    ("tokens as text", "its record's tokens are not whole prompt_tokens and completion_tokens"),
    ("no record", "its record names no questions it learned from"),
    ("no format", "is not a graph from `delib optimize-graph` (its format is not 'deliberation-graph')"),
    ("NaN logit", "NaN"),
    ("overflowing logit", "a spatial logit is not a finite number"),
    ("a list", "holds a JSON list, not an object"),
    ("not JSON", "malformed JSON"),
])
def test_a_damaged_graph_is_refused_in_one_line_naming_what_is_wrong(graph, case, message):
    graph.write_text(damaged(json.loads(graph.read_text()), case))
    with pytest.raises(DelibError) as found:
        load_graph(str(graph), "gptswarm")
    said = str(found.value)
    assert message in said and said.endswith(FIX) and "\n" not in said, said


def test_a_graph_file_that_is_not_text_is_refused(graph):
    graph.write_bytes(b"\x80\x81\x00PK")
    with pytest.raises(DelibError, match="is not UTF-8 text"):
        load_graph(str(graph), "gptswarm")


@pytest.mark.parametrize("name, message", [
    ("", "the graph's path is empty; " + FIX),
    ("nowhere.json", "graph nowhere.json not found; " + FIX),
])
def test_a_graph_that_is_not_there_is_refused(name, message):
    with pytest.raises(DelibError) as found:
        load_graph(name, "gptswarm")
    assert str(found.value) == message


def test_the_folder_of_a_graph_is_told_to_pass_the_graph_in_it(graph, here, refused):
    err = refused("run", "--method", "gptswarm", "--graph", str(graph.parent), "--backend", "scripted",
                  "--limit", "1", "--out", "o")
    assert err.endswith(f"is a folder, not a file; pass the file in it, {graph}")


def searched(folder: Path, workflow: object, record: object = RECORD) -> Path:
    """A file as `delib aflow-search` writes it, holding ``workflow`` and ``record``."""
    folder.mkdir()
    path = folder / WORKFLOW_FILE
    path.write_text(json.dumps({"format": WORKFLOW_FORMAT, "workflow": workflow, "record": record}))
    return path


def test_a_damaged_workflow_is_refused_in_one_line_naming_what_is_wrong(tmp_path):
    good = TRANSFERRED.get("gsm8k").to_json()
    assert load_searched(str(searched(tmp_path / "good", good)))[1] == {"gsm8k/train/0"}
    step = {**good["steps"][0], "input": 5}
    cases = [(searched(tmp_path / "a", good, {}), "its record names no questions it learned from"),
             (searched(tmp_path / "b", {**good, "steps": [step, *good["steps"][1:]]}),
              "input and from are lists of texts"),
             (searched(tmp_path / "c", [1, 2]), 'a workflow is {"steps": [...], "answer": [...]}')]
    for path, message in cases:
        with pytest.raises(DelibError) as found:
            load_searched(str(path))
        assert message in str(found.value) and str(found.value).endswith("search one with `delib aflow-search`")
    with pytest.raises(DelibError, match="is a folder, not a file; pass the file in it, .*good/workflow.json$"):
        load_searched(str(tmp_path / "good"))


def test_a_search_that_kept_only_its_blank_round_is_no_workflow_to_run(tmp_path):
    """An older search wrote round 1's blank workflow when every later round failed: refused as no result; a
    search asked for one round only has that round as its result."""
    blank = {"steps": [{"op": "custom", "out": "answer", "instruction": "", "input": ["$problem"]}],
             "answer": ["answer"]}
    rounds = [{"round": 1, "parent": None, "modification": "", "mean": 0.5, "scores": [0.5], "workflow": blank}]
    failed = searched(tmp_path / "failed", blank, {**RECORD, "settings": {"search_rounds": 3}, "rounds": rounds})
    with pytest.raises(DelibError, match="holds no search result: its optimiser wrote no valid workflow after round "
                                         r"1's blank one \(check --optimizer-model .*search one with `delib aflow"):
        load_searched(str(failed))
    asked_one = searched(tmp_path / "one", blank, {**RECORD, "settings": {"search_rounds": 1}, "rounds": rounds})
    assert load_searched(str(asked_one))[1] == {"gsm8k/train/0"}


def test_a_checkpoint_folder_is_told_to_pass_the_checkpoint_in_it(here, refused):
    from deliberation.allocate.network import AllocatorNet, save_allocator
    from deliberation.allocate.state import FEATURE_NAMES

    meta = {"team": 3, "limit": 6, "step": 1, "vote": None}
    save_allocator(here / "trained" / "allocator.pt", AllocatorNet(len(FEATURE_NAMES)), meta)
    run = ("run", "--method", "mpdf-allocate", "--agents", "6", "--backend", "scripted", "--limit", "1", "--out", "o")
    assert refused(*run, "--policy", "trained").endswith(
        "is a folder, not a file; pass the file in it, trained/allocator.pt")
    assert "--policy is empty; name a checkpoint or a shipped name" in refused(*run, "--policy", "")


def test_a_tree_store_named_by_nothing_or_by_its_manifest_is_refused(here, refused):
    (here / "store").mkdir()
    (here / "store" / "manifest.json").write_text("{}")
    replay = ("evaluate", "--method", "cot", "--offline", "--out", "o", "--trees")
    assert "the tree store's path is empty" in refused(*replay, "")
    assert refused(*replay, "store/manifest.json").endswith("is a file, not a folder; pass its folder, store")
    assert "tree store nowhere not found; build one with `delib tree`" in refused(*replay, "nowhere")
