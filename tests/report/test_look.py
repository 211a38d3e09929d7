"""A look of the paired experiment end to end on scripted stores (experiments/paired_look.sh): the registered
arms replayed over each store's block, paired with the best rule, the stopping rule applied, the look
merged into summary.json; and the refusal of a look whose block is not built."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deliberation.cli.main import main
from deliberation.policy.shipped import checkpoint_path, sha256_hex
from deliberation.trees.store import TreeStore

pytestmark = pytest.mark.needs_split("gsm8k/train")  # its questions come from GSM8K train (no package ships it)

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "paired_look.sh"


def tree(out: Path, benchmark: str, split: str, limit: int) -> None:
    assert main(["tree", "--backend", "scripted", "--benchmark", benchmark, "--split", split, "--limit", str(limit),
                 "--samples", "6", "--methods", "mpdf", "--out", str(out), "--quiet"]) == 0


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("look")
    tree(root / "gsm8k-train", "gsm8k", "train", 6)
    tree(root / "gsm8k-test", "gsm8k", "test", 4)
    tree(root / "math-test", "math", "test", 2)
    assert main(["tune-rules", "--trees", str(root / "gsm8k-train"), "--rounds", "1", "--offline", "--quiet",
                 "--out", str(root / "tuning")]) == 0
    assert main(["train", "--algo", "sft", "--trees", str(root / "gsm8k-train"), "--epochs", "1",
                 "--out", str(root / "sft")]) == 0
    assert main(["tune-votes", "--trees", str(root / "gsm8k-train"), "--rounds", "1", "--offline", "--quiet",
                 "--out", str(root / "votes")]) == 0
    hashes = [sha256_hex(checkpoint_path(c)) for c in ("default", str(root / "sft" / "policy.pt"))]
    (root / "REGISTRATION.md").write_text(f"The arms: `{hashes[0]}` and `{hashes[1]}`.\n")
    return root


def look(root: Path, k: int, script: Path = SCRIPT, **extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "STORES": str(root), "OUT": str(root / "out"), "BLOCK": "2 1", "POLICY": "default",
           "SFT": str(root / "sft" / "policy.pt"), "RULE": str(root / "tuning" / "best_rule.json"),
           "VOTES": str(root / "votes" / "vote_temperatures.json"), "REGISTRATION": str(root / "REGISTRATION.md"),
           "DELIB": str(Path(sys.executable).parent / "delib"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", **extra}
    return subprocess.run(["bash", str(script), str(k)], env=env, capture_output=True, text=True, timeout=600)


def test_a_look_is_recorded_with_its_decision_and_merged_into_the_summary(setup):
    done = look(setup, 2)  # look 2: the first 4 GSM8K and 2 MATH questions
    assert done.returncode == 0, done.stderr[-2000:]
    assert "look 2: z = " in done.stdout
    summary = json.loads((setup / "out" / "summary.json").read_text())
    assert [x["look"] for x in summary["looks"]] == [2]
    record = summary["looks"][0]
    assert record == json.loads((setup / "out" / "look-2" / "summary.json").read_text())
    assert record["decision"]["boundary"] == 2.86 and record["reference"].startswith("best rule: ")
    pooled = record["methods"]["mpdf [default]"]["pooled"]
    assert pooled["n"] == 4 + 2 and {"only_method", "only_reference", "mcnemar_p", "diff_ci95", "token_ratio",
                                     "token_ratio_ci95"} <= set(pooled)
    assert "self-consistency [agents=6]" in record["methods"] and "adaptive-consistency" in record["methods"]
    equal = record["equal_tokens"]["mpdf [default]"]  # against self-consistency at its budget, k <= 6
    assert set(equal) == {"gsm8k/test", "math/test", "pooled"} and equal["pooled"]["n"] == 6
    assert 1 <= equal["gsm8k/test"]["k"][0] <= 6 and len(equal["pooled"]["k"]) == 2  # one k per benchmark
    assert "mcnemar_p_holm" not in pooled  # the primary comparison: the sequential boundary tests it alone
    arms = record["methods"]
    adjusted = {label for label, cells in arms.items() if any("mcnemar_p_holm" in c for c in cells.values())}
    sft = next(label for label in arms if label.startswith("sft ["))
    assert {"mpdf [default]", sft, "adaptive-consistency", "cisc", "cisc-logprob", "always-resample",
            "agreement-resample"} <= adjusted  # the rule's grid has the RESAMPLE action (amendment 2)
    assert not adjusted & {"oracle", "self-consistency [agents=3]"}  # headroom rows, not registered tests
    assert "mcnemar_p_holm" in arms["mpdf [default]"]["gsm8k/test"]  # per benchmark: a secondary
    registered = [c for label in adjusted for c in arms[label].values() if "mcnemar_p_holm" in c]
    registered += [c for cells in record["learned_against"].values() for c in cells.values()]
    assert all(c["mcnemar_p_holm"] >= c["mcnemar_p"] for c in registered)
    against = record["learned_against"]
    assert set(against) == {"self-consistency [agents=3]", "self-consistency [agents=6]"}
    assert against["self-consistency [agents=3]"]["pooled"]["n"] == 6 and "diff_ci95" in against[
        "self-consistency [agents=6]"]["gsm8k/test"]
    headline = (setup / "out" / "look-2" / "headline.md").read_text()
    assert headline.index("**pooled**") < headline.index("**gsm8k/test**") < headline.index("**math/test**")
    assert "\n| mpdf [default] | 6 | " in headline and "| best rule: " in headline
    assert f"decision: {record['decision']['reason']}" in headline
    assert "mpdf [default] against self-consistency [agents=6] (pooled, n = 6): " in headline
    room = record["headroom"]
    assert set(room) == {"gsm8k/test", "math/test", "pooled"} and room["pooled"]["some_agent_right"]["n"] == 6
    assert room["pooled"]["auroc"]["critic"]["n"] == 6 * 6  # 6 questions x (3 round-0 answers + 3 REFINEs)


def test_the_cisc_arms_vote_at_the_temperatures_tuned_on_training_trees(setup):
    done = look(setup, 2)
    assert done.returncode == 0, done.stderr[-2000:]
    tuned = json.loads((setup / "votes" / "vote_temperatures.json").read_text())["methods"]
    assert set(tuned) == {"cisc", "cisc-logprob"}
    for store in ("gsm8k-test", "math-test"):
        for method, chosen in tuned.items():
            config = json.loads((setup / "out" / "look-2" / "sampling" / store / "adaptive" / method /
                                 "config.json").read_text())
            assert config["vote_temperature"] == chosen["vote_temperature"] != 0.1  # scripted ties: the highest T


def test_a_look_without_tuned_vote_temperatures_is_refused(setup, tmp_path):
    env = {**os.environ, "STORES": str(setup), "OUT": str(tmp_path / "out"), "BLOCK": "2 1", "POLICY": "default",
           "SFT": str(setup / "sft" / "policy.pt"), "RULE": str(setup / "tuning" / "best_rule.json")}
    done = subprocess.run(["bash", str(SCRIPT), "1"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "vote_temperatures.json not found" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_look_with_a_checkpoint_the_registration_does_not_name_is_refused(setup, tmp_path):
    """A policy retrained after the registration (here: the shipped grpo checkpoint in the primary arm's
    place) runs no look: one line names its hash, and nothing is written."""
    out = tmp_path / "out"
    done = look(setup, 1, POLICY="grpo", OUT=str(out))
    digest = sha256_hex(checkpoint_path("grpo"))
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        f"checkpoint grpo (sha256 {digest}) is not registered in {setup / 'REGISTRATION.md'}: a look runs only "
        "the checkpoints an amendment committed before it"]
    assert not out.exists()


def test_the_committed_registration_names_the_looks_checkpoints():
    """Amendment 5's hashes are those of the checkpoints the looks run (the shipped primary arm, the SFT arm)."""
    repo = SCRIPT.parents[1]
    text = (repo / "docs" / "results" / "paired" / "PREREGISTRATION.md").read_text()
    for checkpoint in ("qwen2.5-coder-1.5b-trees", str(repo / "docs" / "results" / "paired" / "sft.pt")):
        assert sha256_hex(checkpoint_path(checkpoint)) in text


def test_a_look_at_an_unbuilt_block_is_refused(setup):
    done = look(setup, 3)  # block 3 needs the first 6 GSM8K test questions; 4 are built
    assert done.returncode == 2 and "has not built its first 6 questions yet" in done.stderr


def test_a_look_whose_replays_miss_questions_of_its_block_is_refused(setup):
    """paired_look.py holds the look to its whole block: here the block claims one more MATH question than
    the look replayed (its record would be decided on fewer questions)."""
    done = look(setup, 2)
    assert done.returncode == 0, done.stderr[-2000:]
    script = SCRIPT.with_name("paired_look.py")
    short = subprocess.run([sys.executable, str(script), "2", str(setup / "out" / "look-2"),
                            str(setup / "other-summary.json"), f"{setup / 'gsm8k-test'}:4", f"{setup / 'math-test'}:3"],
                           capture_output=True, text=True, timeout=120)
    assert short.returncode == 1 and "the learned arm answered 6 questions, its block has 7" in short.stderr
    assert not (setup / "other-summary.json").exists()


def test_the_two_round_secondary_grows_round_2_for_the_primary_arms_only(setup, tmp_path):
    """experiments/paired_two_rounds.sh: the learned policy and the best rule at two rounds over the look's
    questions, round-2 nodes generated into the stores; a checkpoint the registration does not name is
    refused before anything is generated."""
    for store in ("gsm8k-test", "math-test"):
        shutil.copytree(setup / store, tmp_path / store)
    script = SCRIPT.with_name("paired_two_rounds.sh")
    nodes = len(TreeStore.open(tmp_path / "gsm8k-test").nodes)
    env = {"STORES": str(tmp_path), "OUT": str(tmp_path / "out")}
    refused = look(setup, 2, script, **env, POLICY="grpo")
    assert refused.returncode == 2 and "is not registered" in refused.stderr
    assert len(TreeStore.open(tmp_path / "gsm8k-test").nodes) == nodes and not (tmp_path / "out").exists()
    done = look(setup, 2, script, **env)
    assert done.returncode == 0, done.stderr[-2000:]
    team = json.loads((tmp_path / "out" / "look-2" / "rounds-2" / "team.json").read_text())
    assert {r["label"] for r in team["rows"]} == {"mpdf [default]", team["reference"]}
    assert {r["n"] for r in team["rows"] if r["column"] == "pooled"} == {4 + 2}
    config = json.loads((tmp_path / "out" / "look-2" / "rounds-2" / "math-test" / "best-rule" / "config.json")
                        .read_text())
    assert config["engine"]["rounds"] == 2 and config["limit"] == 2  # look 2 of blocks of 1 MATH question
