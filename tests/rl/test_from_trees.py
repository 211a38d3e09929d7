"""Training reads tree stores: the decisions derived offline equal a rollout collection's."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from deliberation.cli.main import main
from deliberation.rl.from_trees import decisions_from_trees
from deliberation.types import to_json


def test_tree_decisions_equal_delib_collect_at_round_1(tmp_path):
    common = ["--backend", "scripted", "--limit", "8", "--rounds", "1", "--quiet"]
    assert main(["tree", *common, "--out", str(tmp_path / "store")]) == 0
    assert main(["collect", *common, "--split", "test", "--allow-test", "--out", str(tmp_path / "rollouts")]) == 0
    with gzip.open(tmp_path / "rollouts" / "rollouts.jsonl.gz", "rt") as f:
        collected = [d for line in f for d in json.loads(line)["decisions"]]
    derived = [to_json(d) for d in decisions_from_trees(tmp_path / "store")]
    assert derived and derived == collected


def test_delib_train_on_trees(tmp_path, capsys):
    assert main(["tree", "--backend", "scripted", "--limit", "12", "--quiet", "--out", str(tmp_path / "store")]) == 0
    assert main(["train", "--algo", "sft", "--trees", str(tmp_path / "store"), "--allow-test", "--epochs", "2",
                 "--out", str(tmp_path / "sft")]) == 0
    assert (tmp_path / "sft" / "policy.pt").exists() and "decisions" in capsys.readouterr().out
    assert main(["train", "--algo", "sft", "--out", str(tmp_path / "none")]) == 2
    assert "nothing to train on" in capsys.readouterr().err
    store = str(tmp_path / "store")  # named twice, every question would weigh twice
    assert main(["train", "--algo", "sft", "--trees", store, store, "--allow-test", "--epochs", "2",
                 "--out", str(tmp_path / "twice")]) == 2
    assert re.search(rf"question gsm8k/test/\d+ is in {re.escape(store)} and in another source; train on one",
                     capsys.readouterr().err)
    assert not (tmp_path / "twice").exists()


def test_reward_components_keep_one_term_of_every_action(tmp_path):
    """The component ablation: ``local`` / ``global`` decisions carry that term alone, for all three actions,
    and the two add up to ``both`` (the same behaviour samples, so decisions pair one to one)."""
    assert main(["tree", "--backend", "scripted", "--limit", "10", "--rounds", "1", "--quiet",
                 "--out", str(tmp_path / "store")]) == 0
    both, local, glob = (decisions_from_trees(tmp_path / "store", components=c) for c in ("both", "local", "global"))
    assert len(both) == len(local) == len(glob) > 0
    for b, lo, gl in zip(both, local, glob):
        assert (lo.example_id, lo.action) == (b.example_id, b.action) == (gl.example_id, gl.action)
        assert lo.r_global == 0.0 and gl.r_local == 0.0
        assert (lo.r_local, gl.r_global) == (b.r_local, b.r_global)
        assert all(abs(x + y - z) < 1e-12 for x, y, z in zip(lo.rewards, gl.rewards, b.rewards))
    assert any(lo.rewards != b.rewards for lo, b in zip(local, both))  # the global term is not always zero
    assert any(gl.rewards != b.rewards for gl, b in zip(glob, both))


@pytest.mark.needs_split("gsm8k/train")
def test_reward_components_are_refused_on_rollouts(tmp_path, capsys):
    common = ["--backend", "scripted", "--limit", "4", "--rounds", "1", "--quiet"]
    assert main(["collect", *common, "--out", str(tmp_path / "rollouts")]) == 0
    assert main(["train", "--algo", "sft", "--rollouts", str(tmp_path / "rollouts"), "--reward-components", "local",
                 "--out", str(tmp_path / "sft")]) == 2
    err = capsys.readouterr().err
    assert "--reward-components local" in err and "--trees" in err and not (tmp_path / "sft").exists()
