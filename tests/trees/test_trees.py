"""Deliberation trees on the scripted backend: a replay equals the online run, offline replays call
nothing, deeper rounds grow lazily, and bad stores are refused with one line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from deliberation.cli.main import main
from deliberation.methods import METHODS
from deliberation.errors import DelibError
from deliberation.trees.manifest import BEFORE_METHODS, TreeManifest, read_manifest
from deliberation.outputs.kinds import TREES
from deliberation.trees.store import TreeStore
from registered_methods import FROM_TREES
from replays import episodes

QUESTIONS = 6
DETERMINISTIC = [m for m in FROM_TREES if m != "self-consistency"] + ["self-consistency"]


def delib(*argv: str) -> int:
    return main([*argv, "--quiet"])


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("trees") / "store"
    assert delib("tree", "--backend", "scripted", "--limit", str(QUESTIONS), "--samples", "6", "--out", str(out)) == 0
    return out


def online(tmp: Path, method: str, *extra: str) -> list[dict]:
    out = tmp / f"online-{method}"
    assert delib("run", "--method", method, "--backend", "scripted", "--limit", str(QUESTIONS), "--out", str(out),
                 *extra) == 0
    return episodes(out)


@pytest.mark.parametrize("method", DETERMINISTIC)
def test_offline_replay_equals_delib_run_at_one_round(store, tmp_path, method):
    replay = tmp_path / "replay"
    assert delib("evaluate", "--trees", str(store), "--method", method, "--rounds", "1", "--offline",
                 "--out", str(replay)) == 0
    assert episodes(replay) == online(tmp_path, method, "--rounds", "1")


def test_two_rounds_grow_the_store_lazily_then_replay_offline(store, tmp_path):
    """Round 2 is not in the store: the first replay generates it (and records it), a second one is offline;
    both equal ``delib run`` for every method."""
    before = len(TreeStore.open(store).nodes)
    methods = ",".join(DETERMINISTIC)
    assert delib("evaluate", "--trees", str(store), "--method", methods, "--out", str(tmp_path / "a")) == 0
    assert len(TreeStore.open(store).nodes) > before
    assert delib("evaluate", "--trees", str(store), "--method", methods, "--offline", "--out", str(tmp_path / "b")) == 0
    for method in methods.split(","):
        assert episodes(tmp_path / "b" / method) == episodes(tmp_path / "a" / method) == online(tmp_path, method)


def test_self_consistency_at_more_samples_than_agents(store, tmp_path):
    assert delib("evaluate", "--trees", str(store), "--method", "self-consistency", "--agents", "5", "--offline",
                 "--out", str(tmp_path / "sc5")) == 0
    assert episodes(tmp_path / "sc5") == online(tmp_path, "self-consistency", "--agents", "5")


def bad(capsys, *argv: str) -> str:
    assert delib(*argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("delib: error:")
    return err


def test_offline_replay_names_the_first_missing_node(store, tmp_path, capsys):
    copy = tmp_path / "fresh"
    assert delib("tree", "--backend", "scripted", "--limit", "2", "--out", str(copy)) == 0
    err = bad(capsys, "evaluate", "--trees", str(copy), "--method", "debate", "--rounds", "2", "--no-early-stop",
              "--offline", "--out", str(tmp_path / "r"))
    assert "has no update node of agent 0 for question gsm8k/test/0" in err and "without --offline" in err
    assert not (tmp_path / "r" / "summary.json").exists()


def test_bad_stores_and_requests_are_refused(store, tmp_path, capsys):
    out = str(tmp_path / "r")
    assert "not a tree store" in bad(capsys, "evaluate", "--trees", str(tmp_path), "--method", "cot", "--out", out)
    assert "unknown method 'telepathy'" in bad(capsys, "evaluate", "--trees", str(store), "--method", "telepathy",
                                               "--out", out)
    assert "built for 3 agents" in bad(capsys, "evaluate", "--trees", str(store), "--method", "debate", "--agents",
                                       "4", "--out", out)
    assert "holds 6" in bad(capsys, "evaluate", "--trees", str(store), "--method", "self-consistency", "--agents",
                            "9", "--out", out)
    assert "--policy means nothing" in bad(capsys, "evaluate", "--trees", str(store), "--method", "debate",
                                           "--policy", "default", "--out", out)
    assert "other settings (temperature 0.7 there, 0.5 here)" in bad(
        capsys, "tree", "--backend", "scripted", "--limit", "2", "--temperature", "0.5", "--out", str(store))
    assert "other settings (agents 3 there, 4 here)" in bad(  # round 1 records another team's updates
        capsys, "tree", "--backend", "scripted", "--limit", "3", "--agents", "4", "--out", str(store))
    assert not Path(out).exists()


def test_a_store_recorded_under_another_cache_scope_is_neither_grown_nor_built_on(store, tmp_path, capsys):
    """A backend whose answers changed (openai's plain sampling by default, say) has another cache scope: its
    answers are never filed beside the old ones."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    raw = json.loads((copy / "manifest.json").read_text())
    (copy / "manifest.json").write_text(json.dumps({**raw, "scope": "scripted (sampler=server)"}))
    grown = bad(capsys, "evaluate", "--trees", str(copy), "--method", "mpdf", "--rounds", "2", "--out",
                str(tmp_path / "grow"))
    assert "recorded under cache scope 'scripted (sampler=server)'" in grown and "--offline" in grown
    assert "scope 'scripted (sampler=server)' there" in bad(capsys, "tree", "--backend", "scripted", "--limit", "8",
                                                           "--samples", "6", "--out", str(copy))


def test_a_policy_for_other_features_is_refused(store, tmp_path, capsys):
    import torch

    from deliberation.policy.checkpoint import save_policy
    from deliberation.policy.network import MetaPolicyNet

    path = save_policy(tmp_path / "p.pt", MetaPolicyNet(3), ("a", "b", "c"), 1, {})
    assert torch.load(path, weights_only=True)["feature_names"] == ["a", "b", "c"]
    err = bad(capsys, "evaluate", "--trees", str(store), "--method", "mpdf", "--policy", str(path),
              "--out", str(tmp_path / "r"))
    assert "policy expects 3 features" in err and not (tmp_path / "r").exists()


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_a_damaged_tree_file_is_refused(store, tmp_path, capsys, damage):
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "manifest.json").write_bytes((store / "manifest.json").read_bytes())
    data = (store / TREES).read_bytes()
    (copy / TREES).write_bytes(data[: len(data) // 2] if damage == "truncate" else data + b"not gzip")
    err = bad(capsys, "evaluate", "--trees", str(copy), "--method", "cot", "--offline", "--out", str(tmp_path / "r"))
    assert str(copy / TREES) in err and "delib tree" in err


def test_a_build_killed_while_appending_resumes_and_cuts_the_torn_record(store, tmp_path):
    """The last record half written (a build killed mid-append): the rerun build cuts it off and finishes,
    and the store then holds every question as an uninterrupted build does."""
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "manifest.json").write_bytes((store / "manifest.json").read_bytes())
    data = (store / TREES).read_bytes()
    (copy / TREES).write_bytes(data + gzip.compress(b'{"example_id": "x", "nodes": []}\n')[:20])
    with pytest.raises(DelibError, match="incomplete record"):
        TreeStore.open(copy)
    assert delib("tree", "--backend", "scripted", "--limit", str(QUESTIONS), "--samples", "6", "--out", str(copy)) == 0
    assert TreeStore.open(copy).built == TreeStore.open(store).built


def test_a_recording_replay_cuts_a_torn_record_and_an_offline_one_refuses_it(store, tmp_path, capsys):
    """A replay that records into the store (not --offline) is its writer, as a build is: it cuts a record a
    killed writer left half written and runs; an offline replay only reads, and refuses it."""
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "manifest.json").write_bytes((store / "manifest.json").read_bytes())
    data = (store / TREES).read_bytes()
    (copy / TREES).write_bytes(data + gzip.compress(b'{"example_id": "x", "nodes": []}\n')[:20])
    assert "ends in an incomplete record" in bad(capsys, "evaluate", "--trees", str(copy), "--method", "cot",
                                                 "--offline", "--out", str(tmp_path / "offline"))
    assert delib("evaluate", "--trees", str(copy), "--method", "cot", "--out", str(tmp_path / "r"), "--quiet") == 0
    assert (copy / TREES).read_bytes() == data and TreeStore.open(copy).built == TreeStore.open(store).built


def test_a_corrupt_manifest_is_refused(store, tmp_path, capsys):
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "manifest.json").write_text("{not json")
    assert "is not valid JSON" in bad(capsys, "evaluate", "--trees", str(copy), "--method", "cot",
                                      "--out", str(tmp_path / "r"))


def test_the_tree_file_is_gzip_jsonl_with_round_0_and_round_1(store):
    with gzip.open(store / TREES, "rt") as f:
        rows = [json.loads(line) for line in f]
    kinds = {n["kind"] for r in rows for n in r["nodes"]}
    assert kinds == {"answer", "critic", "update"}
    assert {r["example_id"] for r in rows if r.get("built")} == {f"gsm8k/test/{i}" for i in range(QUESTIONS)}


@pytest.mark.parametrize("row", [
    [1, 2],  # not an object: row["nodes"] raised TypeError
    {"nodes": []},  # no example id: KeyError
    {"example_id": "q", "nodes": [{"key": "k", "kind": "answer"}]},  # a node without its outcome: ValueError
    {"example_id": "q", "nodes": "abc"},
    {"example_id": "q", "nodes": [], "built": "yes"},
])
def test_a_tree_record_of_the_wrong_shape_is_refused_by_file_and_line(tmp_path, row):
    from deliberation.files import append_gzip_line

    MINIMAL.write(tmp_path)
    append_gzip_line(tmp_path / TREES, {"example_id": "q", "nodes": []})
    append_gzip_line(tmp_path / TREES, row)
    with pytest.raises(DelibError, match=rf"{TREES} line 2 is not a record `delib tree` writes \(") as err:
        TreeStore.open(tmp_path)
    assert "\n" not in str(err.value)


MINIMAL = TreeManifest(backend="scripted", model="m", scope="m", supports_logprobs=False, backend_options={},
                       benchmark="gsm8k", split="test", temperature=0.7, max_tokens=8, seed=0,
                       verbal_confidence=False, prompt_version=2, agents=3, samples=3)


@pytest.mark.parametrize("damage", [{"agents": None}, {"format": "deliberation-trees", "backend": "scripted"}])
def test_a_manifest_lacking_an_entry_is_refused_in_one_line(tmp_path, damage):
    raw = {k: v for k, v in MINIMAL.to_dict().items() if k not in damage or damage[k] is not None}
    (tmp_path / "manifest.json").write_text(json.dumps(raw if damage.get("agents", 0) is None else damage))
    with pytest.raises(DelibError, match="manifest.json lacks or mangles an entry") as err:
        TreeStore.open(tmp_path)
    assert "\n" not in str(err.value)


OLD_MANIFEST = {  # a committed store from before --methods, selections and resumes (the 0.5B GSM8K train one)
    "agents": 3, "backend": "llamacpp", "backend_options": {"model": "qwen2.5-coder-0.5b", "n_threads": 2},
    "benchmark": "gsm8k", "cache": "runs/trees-qwen2.5-coder-0.5b.sqlite", "command": "delib tree --limit 60",
    "format": "deliberation-trees", "max_tokens": 512, "model": "qwen2.5-coder-0.5b", "prompt_version": 2,
    "samples": 3, "scope": "qwen2.5-coder-0.5b", "seed": 0, "split": "train", "supports_logprobs": True,
    "temperature": 0.7, "verbal_confidence": False}


def test_an_old_manifest_reads_as_it_was_built_and_writes_back_unchanged(tmp_path):
    """No methods: the round-1 nodes of every method registered when the entry was added, never of one
    registered later; no selection: the whole split; nothing resumed it."""
    (tmp_path / "manifest.json").write_text(json.dumps(OLD_MANIFEST))
    old = read_manifest(tmp_path)
    assert old.methods is None and old.recorded == BEFORE_METHODS and old.resumes == ()
    later = [m for m in METHODS if m not in BEFORE_METHODS]
    assert {"php", "mpdf-allocate", "agreement-resample"} <= set(later) and not set(later) & set(old.recorded)
    assert old.selection == MINIMAL.selection and old.samples == 3 and old.backend_options["n_threads"] == 2
    assert old.to_dict() == OLD_MANIFEST
    later = {**OLD_MANIFEST, "written_by_a_later_version": [1, 2]}  # kept and written back, not dropped
    (tmp_path / "manifest.json").write_text(json.dumps(later))
    assert read_manifest(tmp_path).to_dict() == later


@pytest.mark.parametrize("entry, value", [("samples", "3"), ("methods", "mpdf"), ("temperature", "hot"),
                                          ("selection", 5), ("temperature", None), ("agents", None),
                                          ("model", None), ("verbal_confidence", None), ("agents", 0),
                                          ("samples", 0), ("max_tokens", -1), ("seed", -1), ("temperature", -0.5)])
def test_a_manifest_entry_of_the_wrong_type_is_refused_in_one_line(tmp_path, entry, value):
    (tmp_path / "manifest.json").write_text(json.dumps({**OLD_MANIFEST, entry: value}))
    with pytest.raises(DelibError, match=rf"manifest.json lacks or mangles an entry \(.*{entry}") as err:
        TreeStore.open(tmp_path)
    assert "\n" not in str(err.value)


def test_a_folder_in_place_of_the_trees_file_is_named_not_a_traceback(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps(OLD_MANIFEST))
    (tmp_path / "trees.jsonl.gz").mkdir()
    with pytest.raises(DelibError, match="trees.jsonl.gz is a folder, not the file `delib tree` writes"):
        TreeStore.open(tmp_path)


def test_a_store_recorded_with_a_subset_seed_and_no_subset_still_opens(tmp_path):
    """The command line refuses --subset-seed without --subset (it seeds nothing); a store recorded so before
    that refusal still reads."""
    (tmp_path / "manifest.json").write_text(json.dumps({**OLD_MANIFEST, "selection": {"sample_seed": 3}}))
    assert read_manifest(tmp_path).selection.subset_seed == 3
