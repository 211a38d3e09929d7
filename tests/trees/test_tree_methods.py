"""``delib tree --methods``: a store records only the round-1 nodes the named methods read, its manifest
says so, those methods replay offline exactly, and a build resumed with fewer samples or methods narrows
what the manifest promises."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from deliberation import benchmarks
from deliberation.cli.main import main
from deliberation.errors import DelibError
from deliberation.trees.store import TreeStore, built_examples, built_prefix
from replays import episodes

QUESTIONS = 3


def delib(*argv: str) -> int:
    return main([*argv, "--quiet"])


def build(out: Path, *extra: str) -> None:
    assert delib("tree", "--backend", "scripted", "--limit", str(QUESTIONS), "--out", str(out), *extra) == 0


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("tree-methods")
    build(root / "all", "--samples", "6")
    build(root / "mpdf", "--samples", "6", "--methods", "mpdf")
    return root / "all", root / "mpdf"


def test_a_store_for_one_method_holds_fewer_nodes_and_says_which(stores):
    full, mpdf = stores
    small, large = TreeStore.open(mpdf), TreeStore.open(full)
    assert small.manifest.methods == ("mpdf",) and "debate" in large.manifest.methods
    assert set(small.nodes) < set(large.nodes)  # the same requests, fewer of them
    assert {n.kind for n in small.nodes.values()} == {"answer", "critic", "update"}
    assert small.built == large.built


@pytest.mark.parametrize("method", ["mpdf", "always-refine", "confidence-threshold", "self-consistency"])
def test_methods_reading_only_recorded_nodes_replay_offline_as_online(stores, tmp_path, method):
    _, mpdf = stores
    replay, run = tmp_path / "replay", tmp_path / "run"
    assert delib("evaluate", "--trees", str(mpdf), "--method", method, "--rounds", "1", "--offline",
                 "--out", str(replay)) == 0
    assert delib("run", "--method", method, "--backend", "scripted", "--limit", str(QUESTIONS), "--rounds", "1",
                 "--out", str(run)) == 0
    assert episodes(replay) == episodes(run)


def test_a_method_whose_nodes_were_not_recorded_is_named_offline(stores, tmp_path, capsys):
    _, mpdf = stores
    assert delib("evaluate", "--trees", str(mpdf), "--method", "debate", "--rounds", "1", "--no-early-stop",
                 "--offline", "--out", str(tmp_path / "r")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "records round 1 of mpdf only" in err


def test_an_unknown_method_is_one_line_and_builds_nothing(tmp_path, capsys):
    assert delib("tree", "--backend", "scripted", "--limit", "1", "--methods", "mpdf,telepathy",
                 "--out", str(tmp_path / "s")) == 2
    assert "unknown method 'telepathy'" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_resuming_with_fewer_samples_and_methods_narrows_the_manifest(tmp_path):
    """The old store recorded 6 samples and every method for its first questions; resumed with 4 samples
    and mpdf only, the manifest promises what every built question holds."""
    out = tmp_path / "s"
    assert delib("tree", "--backend", "scripted", "--limit", "1", "--samples", "6", "--out", str(out)) == 0
    build(out, "--samples", "4", "--methods", "mpdf")
    store = TreeStore.open(out)
    assert store.manifest.samples == 4 and store.manifest.methods == ("mpdf",) and len(store.built) == QUESTIONS
    assert "--samples 6" in store.manifest.command and "--limit 1 " in store.manifest.command
    assert store.manifest.resumes == (f"delib tree --backend scripted --limit {QUESTIONS} --out {out} --samples 4 "
                                      "--methods mpdf --quiet",)
    raw = json.loads((out / "manifest.json").read_text())
    assert raw["resumes"] == [{"command": store.manifest.resumes[0]}] and raw["methods"] == ["mpdf"]
    build(out, "--samples", "4", "--methods", "mpdf")  # the same command again is recorded once
    assert len(TreeStore.open(out).manifest.resumes) == 1


def test_a_smaller_recipe_rerun_over_built_questions_keeps_what_they_hold(tmp_path):
    """A store extended to 6 samples, then the command that first built it (4 samples) run again: it builds
    no question, so the manifest still promises 6; a later question built with 4 narrows it."""
    out = tmp_path / "s"
    build(out, "--samples", "4")
    build(out, "--samples", "6")
    before = TreeStore.open(out).nodes
    build(out, "--samples", "4")
    store = TreeStore.open(out)
    assert store.manifest.samples == 6 and store.nodes == before and len(store.manifest.resumes) == 1
    assert delib("tree", "--backend", "scripted", "--limit", str(QUESTIONS + 1), "--samples", "4",
                 "--out", str(out)) == 0
    assert TreeStore.open(out).manifest.samples == 4


def test_a_resumed_build_completes_built_questions_an_older_recipe_left_short(stores, tmp_path, monkeypatch):
    """The first 1.5B questions were built before the extra round-0 samples had critic calls: resuming with
    today's recipe adds exactly those nodes (nothing else is generated) and the store then equals a fresh
    build, so cisc and the four-action replays read every question."""
    _, fresh = stores
    out = tmp_path / "old"
    with monkeypatch.context() as patch:  # the older recipe: extra samples without their critic calls
        patch.setattr("deliberation.trees.build.score_confidence", lambda ctx, records: None)
        build(out, "--samples", "6", "--methods", "mpdf")
    short = set(TreeStore.open(out).nodes)
    build(out, "--samples", "6", "--methods", "mpdf")
    store = TreeStore.open(out)
    added = [store.nodes[k] for k in set(store.nodes) - short]
    assert set(store.nodes) == set(TreeStore.open(fresh).nodes) and store.built == TreeStore.open(fresh).built
    assert len(added) == QUESTIONS * 3 and {n.kind for n in added} == {"critic"}
    assert delib("evaluate", "--trees", str(out), "--method", "cisc", "--agents", "6", "--rounds", "1",
                 "--offline", "--out", str(tmp_path / "cisc")) == 0


def test_a_build_and_its_completeness_check_on_resume_run_no_answer_key(stores, tmp_path, monkeypatch):
    """HumanEval's answer key runs the program; no request of a build depends on a key, so neither a build
    nor the check that a resumed one's built questions hold every node computes one, and the nodes are the
    same requests as a build that did."""
    _, mpdf = stores
    def refuse(example, text):
        raise AssertionError("an answer key was computed")
    monkeypatch.setattr(benchmarks.get("gsm8k"), "key_for", refuse)
    build(tmp_path / "fresh", "--samples", "6", "--methods", "mpdf")
    build(tmp_path / "fresh", "--samples", "6", "--methods", "mpdf")  # resumed: every question checked
    assert TreeStore.open(tmp_path / "fresh").nodes.keys() == TreeStore.open(mpdf).nodes.keys()


def test_the_built_prefix_stops_at_the_first_question_in_flight(stores):
    """A build with questions in flight completes them out of order: an interim analysis reads the prefix."""
    _, mpdf = stores
    store = TreeStore.open(mpdf)
    assert built_prefix(store, None) == QUESTIONS
    store.built.discard("gsm8k/test/1")
    assert built_prefix(store, None) == 1 and len(store.built) == QUESTIONS - 1
    store.built.discard("gsm8k/test/0")
    assert built_prefix(store, None) == 0
    with pytest.raises(DelibError, match="has no built question to read yet"):
        built_examples(store, None, 0)


def test_a_replay_may_read_the_first_questions_of_a_store_only(stores, tmp_path, capsys):
    """A look at a block replays the store's first N questions while the build adds later ones."""
    _, mpdf = stores
    assert delib("evaluate", "--trees", str(mpdf), "--method", "mpdf", "--rounds", "1", "--offline", "--questions",
                 "2", "--out", str(tmp_path / "two")) == 0
    assert [e["example_id"] for e in episodes(tmp_path / "two")] == ["gsm8k/test/0", "gsm8k/test/1"]
    assert delib("evaluate", "--trees", str(mpdf), "--method", "mpdf", "--rounds", "1", "--offline", "--questions",
                 "9", "--out", str(tmp_path / "nine")) == 2
    assert "has not built its first 9 questions yet (3 built)" in capsys.readouterr().err


def test_compare_and_tune_take_one_question_count_per_store(stores, tmp_path, capsys):
    """A look's block: each store's own first N (GSM8K 100k and MATH-500 50k in the paired experiment)."""
    full, mpdf = stores
    assert delib("tune-rules", "--trees", f"{full},{mpdf}", "--questions", "2,1", "--rounds", "1", "--offline",
                 "--allow-test", "--out", str(tmp_path / "t")) == 0
    configs = (tmp_path / "t").glob("*/always-persist/config.json")
    runs = {p.parent.parent.name: len(episodes(p.parent)) for p in configs}
    assert runs == {"all": 2, "mpdf": 1}
    assert delib("tune-rules", "--trees", str(full), "--questions", "2,1", "--offline", "--out",
                 str(tmp_path / "u")) == 2
    assert "one per store (1 stores)" in capsys.readouterr().err


def test_a_replay_may_read_named_questions_only(stores, tmp_path, capsys):
    """A validation fifth: the questions a training run held out, by id."""
    _, mpdf = stores
    assert delib("evaluate", "--trees", str(mpdf), "--method", "mpdf", "--rounds", "1", "--offline", "--ids",
                 "gsm8k/test/2,gsm8k/test/0", "--out", str(tmp_path / "two")) == 0
    assert [e["example_id"] for e in episodes(tmp_path / "two")] == ["gsm8k/test/0", "gsm8k/test/2"]
    assert delib("evaluate", "--trees", str(mpdf), "--method", "mpdf", "--rounds", "1", "--offline", "--ids",
                 "gsm8k/train/7", "--out", str(tmp_path / "none")) == 2
    assert "holds none of the 1 questions asked for" in capsys.readouterr().err
    listed = tmp_path / "val.txt"  # every command's --ids takes @FILE, as `delib run`'s does
    listed.write_text("gsm8k/test/2\ngsm8k/test/0\n")
    assert delib("evaluate", "--trees", str(mpdf), "--method", "mpdf", "--rounds", "1", "--offline", "--ids",
                 f"@{listed}", "--out", str(tmp_path / "file-eval")) == 0
    assert [e["example_id"] for e in episodes(tmp_path / "file-eval")] == ["gsm8k/test/0", "gsm8k/test/2"]


def test_where_resuming_a_build_is_documented_it_says_how_to_get_identical_stores():
    """A resumed llama.cpp build can differ from an uninterrupted one (the prefix cache
    is gone), and the docs that describe resuming say so and name the way out."""
    root = Path(__file__).resolve().parents[2]
    for doc in (root / "docs" / "guides" / "trees.md", root / "data" / "trees" / "COMMANDS.md"):
        text = " ".join(doc.read_text().split())
        assert "prefix_cache_mb=0" in text and "uninterrupted build" in text, doc


def test_the_methods_a_store_replays_follow_from_what_it_records():
    """A store of always-refine records REFINE without its critic: methods reading the critic after round 0
    (mpdf, confidence-threshold, the oracle) and other update prompts (debate) do not replay from it."""
    from deliberation.trees.build import replayable

    refine_only = set(replayable(("always-refine",)))
    assert {"always-refine", "always-persist", "self-consistency", "cisc"} <= refine_only
    assert not {"mpdf", "confidence-threshold", "oracle", "debate"} & refine_only
    assert set(replayable(("mpdf",))) - refine_only == {"mpdf", "confidence-threshold", "oracle",
                                                         "agreement-then-confidence"}


def test_a_replay_generating_what_the_store_lacks_runs_questions_concurrently_and_records_it(stores, tmp_path):
    """--concurrency batches the nodes a replay adds (debate's, unrecorded in an mpdf store): the scripted
    backend answers a request alike in any batch, so the episodes equal a sequential replay's."""
    _, mpdf = stores
    copies = {n: tmp_path / f"store-{n}" for n in (1, 3)}
    for n, store in copies.items():
        shutil.copytree(mpdf, store)
        assert delib("evaluate", "--trees", str(store), "--method", "debate", "--rounds", "1", "--concurrency",
                     str(n), "--out", str(tmp_path / f"run-{n}")) == 0
    by_question = {n: sorted(episodes(tmp_path / f"run-{n}"), key=lambda e: e["example_id"]) for n in copies}
    assert by_question[3] == by_question[1] and len(by_question[1]) == QUESTIONS
    assert json.loads((tmp_path / "run-3" / "config.json").read_text())["concurrency"] == 3
    assert len(TreeStore.open(copies[3]).nodes) == len(TreeStore.open(copies[1]).nodes) > len(
        TreeStore.open(mpdf).nodes)
