"""The state-and-actions table end to end on scripted training stores (experiments/state_actions.sh): six policies
trained on the stores, the best rule tuned on the fit questions, everything replayed on the validation
fifth only, and a report pairing the four-action policy with the rule, the sampling baselines and
self-consistency at equal tokens."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deliberation.cli.main import main
from deliberation.rl.data import held_out_names
from deliberation.trees.responses import responses
from deliberation.trees.store import TreeStore
from replays import episodes

pytestmark = [pytest.mark.needs_split("gsm8k/train"),  # its questions come from GSM8K train (no package ships it)
              pytest.mark.slow]  # trains six policies: an experiment (make test-slow)

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "state_actions.sh"
PREPARE = SCRIPT.with_name("paired_prepare.sh")
CHOOSE = SCRIPT.with_name("choose_arm.py")
BIN = Path(sys.executable).parent
ENV = {**os.environ, "DELIB": str(BIN / "delib"), "PYTHON": sys.executable, "PATH": f"{BIN}:{os.environ['PATH']}"}


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> tuple[Path, list[Path]]:
    root = tmp_path_factory.mktemp("state-actions")
    stores = [root / "gsm8k-train", root / "math-train"]
    for store, benchmark, limit in zip(stores, ("gsm8k", "math"), (10, 5)):
        assert main(["tree", "--backend", "scripted", "--benchmark", benchmark, "--split", "train", "--limit",
                     str(limit), "--samples", "6", "--methods", "mpdf", "--out", str(store), "--quiet"]) == 0
    env = ENV | {"TRAIN_ARGS": "--epochs 1"}
    done = subprocess.run(["bash", str(SCRIPT), str(root / "out"), ",".join(map(str, stores))], env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return root / "out", stores


def test_six_policies_are_trained_and_the_report_pairs_the_four_action_policy(table):
    out, _ = table
    trained = sorted(p.parent.name for p in (out / "train").glob("*/policy.pt"))
    assert trained == ["full", "full-resample", "full-signals", "sft", "sft-resample", "sft-signals"]
    text = (out / "report" / "report.md").read_text()
    assert f"## Paired against mpdf [{out / 'train' / 'full-resample' / 'policy.pt'}]" in text
    assert "## Against self-consistency at equal tokens" in text
    for row in ("adaptive-consistency", "cisc", "cisc-logprob", "self-consistency [agents=6]", "best rule: "):
        assert f"| {row}" in text


def test_each_signals_auroc_is_measured_on_the_validation_fifth(table):
    out, stores = table
    names = sorted(q for s in stores for q in TreeStore.open(s).built)
    held = held_out_names(names, 0.2, 0)
    tables = json.loads((out / "signals" / "signals.json").read_text())
    pooled = {row["signal"]: row for row in tables["pooled"]}
    assert {"critic", "agreement", "logprob-mean", "arith-ok"} <= set(pooled)
    expected = [r for s in stores for r in responses(TreeStore.open(s)) if r.example_id in held]
    assert pooled["agreement"]["n"] == len(expected) > 0  # defined for every response: exactly the held ones'


def test_every_replay_reads_the_validation_fifth_only_and_the_rule_the_rest(table):
    out, stores = table
    names = sorted(q for s in stores for q in TreeStore.open(s).built)
    held = held_out_names(names, 0.2, 0)
    replayed = ids_in(out / "sampling") | ids_in(out / "compare")
    assert replayed and replayed <= held
    tuned = ids_in(out / "tuning")
    assert tuned and not tuned & held
    assert ids_in(out / "votes") == tuned  # CISC's temperatures: tuned on the same four fifths as the rule
    votes = json.loads((out / "votes" / "vote_temperatures.json").read_text())["methods"]
    for store in stores:
        for method, chosen in votes.items():
            config = json.loads((out / "sampling" / store.name / "adaptive" / method / "config.json").read_text())
            assert config["vote_temperature"] == chosen["vote_temperature"]
    assert json.loads((out / "tuning" / "best_rule.json").read_text())["label"]


def test_the_arm_the_rule_chooses_is_shipped_with_its_hash_and_the_rule_tuned_on_every_training_question(
        table, tmp_path):
    out, stores = table
    env = ENV | {"TRAIN": ",".join(map(str, stores)), "OUT": str(tmp_path / "paired"),
                 "SHIP": str(tmp_path / "ship"), "NAME": "trees"}
    (tmp_path / "ship").mkdir()
    done = subprocess.run(["bash", str(PREPARE), str(out)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    team = json.loads((out / "compare" / "team.json").read_text())
    pooled = {r["label"]: r["accuracy"] for r in team["rows"] if r["column"] == "pooled"}
    signals = pooled[f"mpdf [{out}/train/full-signals/policy.pt]"] > pooled[f"mpdf [{out}/train/full/policy.pt]"]
    arm = "full-signals" if signals else "full"
    assert f"primary arm (amendment 2's rule): {arm}" in done.stdout
    shipped = tmp_path / "ship" / "trees.pt"
    assert shipped.read_bytes() == (out / "train" / arm / "policy.pt").read_bytes()
    sft = arm.replace("full", "sft")
    assert (tmp_path / "paired" / "sft.pt").read_bytes() == (out / "train" / sft / "policy.pt").read_bytes()
    assert (tmp_path / "paired" / "split.json").read_bytes() == (out / "train" / sft / "split.json").read_bytes()
    assert hashlib.sha256(shipped.read_bytes()).hexdigest() in done.stdout and "POLICY=trees" in done.stdout
    names = {q for s in stores for q in TreeStore.open(s).built}
    assert ids_in(tmp_path / "paired" / "tuning") == names  # every training question, the validation fifth too
    rule = json.loads((tmp_path / "paired" / "best_rule.json").read_text())
    assert rule == json.loads((tmp_path / "paired" / "tuning" / "best_rule.json").read_text())
    assert ids_in(tmp_path / "paired" / "votes") == names  # CISC's temperatures for the looks: every question too
    votes = (tmp_path / "paired" / "vote_temperatures.json").read_text()
    assert votes == (tmp_path / "paired" / "votes" / "vote_temperatures.json").read_text()
    registered = json.loads((tmp_path / "paired" / "registered.json").read_text())  # what the looks check
    assert {role: registered[role]["sha256"] for role in ("policy", "sft", "rule", "votes")} == {
        role: hashlib.sha256(path.read_bytes()).hexdigest() for role, path in (
            ("policy", shipped), ("sft", tmp_path / "paired" / "sft.pt"),
            ("rule", tmp_path / "paired" / "best_rule.json"),
            ("votes", tmp_path / "paired" / "vote_temperatures.json"))}
    assert registered["block"] == {"sizes": [100, 50]}


def test_preparing_without_the_table_is_refused(tmp_path):
    env = ENV | {"OUT": str(tmp_path / "paired"), "SHIP": str(tmp_path)}
    done = subprocess.run(["bash", str(PREPARE), str(tmp_path / "nothing")], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "run experiments/state_actions.sh first" in done.stderr
    assert not (tmp_path / "paired").exists()


@pytest.mark.parametrize("full, signals, n_signals, chosen", [
    (0.70, 0.75, 20, "full-signals"), (0.75, 0.70, 20, "full"), (0.70, 0.70, 20, "full"),  # a tie: the paper's
    (0.70, 0.75, 19, None),  # replayed on other questions: refused
])
def test_amendment_2_rule_chooses_the_arm(tmp_path, full, signals, n_signals, chosen):
    out = str(tmp_path / "sa")
    rows = [{"label": f"mpdf [{out}/train/{run}/policy.pt]", "column": column, "accuracy": acc, "n": n}
            for run, acc, n in (("full", full, 20), ("full-signals", signals, n_signals))
            for column in ("gsm8k/train", "pooled")]
    rows.append({"label": "best rule: x", "column": "pooled", "accuracy": 0.99, "n": 20})
    (tmp_path / "sa" / "compare").mkdir(parents=True)
    (tmp_path / "sa" / "compare" / "team.json").write_text(json.dumps({"rows": rows, "learned": []}))
    done = subprocess.run([sys.executable, str(CHOOSE), out], capture_output=True, text=True, timeout=60)
    if chosen is None:
        assert done.returncode == 1 and "different questions" in done.stderr
    else:
        assert done.returncode == 0 and done.stdout.strip() == chosen, done.stderr


def ids_in(folder: Path) -> set[str]:
    """The questions of every run directory under ``folder``."""
    return {e["example_id"] for run in folder.rglob("episodes.jsonl") for e in episodes(run.parent)}
