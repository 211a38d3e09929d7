"""``delib tree --samples 12`` on a store of 6 extends it in place: the old file is a prefix of the new one
(no node rewritten), only the missing samples and their critic calls are generated, with the seeds a fresh
build of 12 gives them, samples a two-round RESAMPLE replay already drew are reused, every replay that read
the store before reads it the same after, and the manifest promises 12 only once every built question
holds them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from deliberation.cli.main import main
from deliberation.outputs.kinds import TREES
from deliberation.trees.store import TreeStore
from replays import episodes

QUESTIONS = 4
REPLAYS = {  # a replay that reads at most 6 samples: its episodes must not move when the store grows
    "sc-6": ("--method", "self-consistency", "--agents", "6", "--rounds", "1"),
    "adaptive-6": ("--method", "adaptive-consistency", "--agents", "6", "--rounds", "1"),
    "cisc-6": ("--method", "cisc", "--agents", "6", "--rounds", "1"),
    "mpdf": ("--method", "mpdf", "--rounds", "1"),
    "agreement-resample": ("--method", "agreement-resample", "--rounds", "1"),
}


def delib(*argv: str) -> int:
    return main([*argv, "--quiet"])


def build(out: Path, samples: int, *extra: str) -> None:
    assert delib("tree", "--backend", "scripted", "--limit", str(QUESTIONS), "--samples", str(samples),
                 "--methods", "mpdf", "--out", str(out), *extra) == 0


def replay_all(store: Path, out: Path) -> dict[str, list[dict]]:
    found = {}
    for name, argv in REPLAYS.items():
        assert delib("evaluate", "--trees", str(store), *argv, "--offline", "--out", str(out / name)) == 0
        found[name] = episodes(out / name)
    return found


@pytest.fixture(scope="module")
def grown(tmp_path_factory) -> dict[str, Path]:
    """A store of 6 (its bytes and replays kept), then the same store extended to 12, and a fresh one of 12."""
    root = tmp_path_factory.mktemp("extend")
    build(root / "store", 6)
    shutil.copytree(root / "store", root / "before")
    build(root / "store", 12)
    build(root / "fresh", 12)
    return {"before": root / "before", "after": root / "store", "fresh": root / "fresh", "root": root}


def test_the_extension_appends_and_rewrites_nothing(grown):
    old, new = (grown[k] / TREES for k in ("before", "after"))
    assert new.read_bytes().startswith(old.read_bytes()) and new.stat().st_size > old.stat().st_size
    before, after = TreeStore.open(grown["before"]), TreeStore.open(grown["after"])
    assert all(after.nodes[key] == node for key, node in before.nodes.items())


def test_it_generates_only_the_missing_samples_and_their_critic_calls(grown):
    before, after = TreeStore.open(grown["before"]), TreeStore.open(grown["after"])
    added = [after.nodes[k] for k in set(after.nodes) - set(before.nodes)]
    kinds = sorted(n.kind.value for n in added)
    assert kinds == ["answer"] * (6 * QUESTIONS) + ["critic"] * (6 * QUESTIONS)
    assert sorted({n.agent for n in added if n.kind.value == "answer"}) == list(range(6, 12))


def test_the_extended_store_equals_a_fresh_build_of_12(grown):
    after, fresh = TreeStore.open(grown["after"]), TreeStore.open(grown["fresh"])
    assert after.nodes == fresh.nodes and after.built == fresh.built
    assert after.manifest.samples == fresh.manifest.samples == 12
    assert "--samples 12" in after.manifest.resumes[0]


def test_replays_that_read_6_samples_are_unchanged_and_12_replay_offline(grown, tmp_path):
    assert replay_all(grown["before"], tmp_path / "before") == replay_all(grown["after"], tmp_path / "after")
    assert delib("evaluate", "--trees", str(grown["after"]), "--method", "self-consistency", "--agents", "12",
                 "--rounds", "1", "--offline", "--out", str(tmp_path / "sc12")) == 0
    assert all(len(row["turns"]) == 12 for row in episodes(tmp_path / "sc12"))


def test_an_extension_stopped_part_way_promises_the_old_samples_until_it_completes(grown, tmp_path):
    out = tmp_path / "store"
    shutil.copytree(grown["before"], out)
    assert delib("tree", "--backend", "scripted", "--limit", "2", "--samples", "12", "--methods", "mpdf",
                 "--out", str(out)) == 0  # the first 2 of 4 built questions extended
    assert TreeStore.open(out).manifest.samples == 6
    build(out, 12)
    extended = TreeStore.open(out)
    assert extended.manifest.samples == 12 and extended.nodes == TreeStore.open(grown["fresh"]).nodes


def test_samples_a_resample_replay_drew_are_reused(grown, tmp_path):
    """A two-round replay of always-resample draws round-0 samples 6-8 where its team reaches round 2; the
    extension then generates only the samples no replay drew."""
    out = tmp_path / "store"
    shutil.copytree(grown["before"], out)
    assert delib("evaluate", "--trees", str(out), "--method", "always-resample", "--rounds", "2",
                 "--out", str(tmp_path / "resample")) == 0
    held = TreeStore.open(out).nodes
    drawn = {k for k, n in held.items() if n.kind.value == "answer" and n.agent >= 6}
    assert drawn  # the questions whose team did not agree by round 2
    build(out, 12)
    store, fresh = TreeStore.open(out), TreeStore.open(grown["fresh"])
    generated = [n for k, n in store.nodes.items() if k not in held and n.kind.value == "answer"]
    assert len(generated) == 6 * QUESTIONS - len(drawn)
    assert drawn <= set(fresh.nodes) and all(store.nodes[k] == fresh.nodes[k] for k in fresh.nodes)
