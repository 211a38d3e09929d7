"""Training reads tree stores: the decisions derived offline equal a rollout collection's."""

from __future__ import annotations

import gzip
import json

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
    assert main(["train", "--algo", "sft", "--trees", str(tmp_path / "store"), "--epochs", "2",
                 "--out", str(tmp_path / "sft")]) == 0
    assert (tmp_path / "sft" / "policy.pt").exists() and "decisions" in capsys.readouterr().out
    assert main(["train", "--algo", "sft", "--out", str(tmp_path / "none")]) == 2
    assert "nothing to train on" in capsys.readouterr().err
