"""Renamed settings (``types.formerly``): ``--subset`` (a random subset of questions, once ``--sample``) and
``delib collect --joint-actions`` (once ``--samples``), so that "samples" means round-0 samples only. Files keep
the keys they always had; the former flags and TOML keys are refused with a line naming the new name."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from deliberation.cli.main import main
from deliberation.config import Selection
from deliberation.errors import DelibError
from deliberation.rl.rollout_files import manifest_of
from deliberation.runs.experiment_file import parse_experiment
from deliberation.types import formerly, from_json, renamed, to_json

ROLLOUTS = Path(__file__).resolve().parents[2] / "data" / "rollouts"


@dataclass(frozen=True)
class Record:
    new: int = field(default=0, metadata=formerly("old"))
    kept: str = "x"


def test_a_renamed_field_is_written_and_read_under_its_former_key():
    assert to_json(Record(3)) == {"old": 3, "kept": "x"}
    assert from_json(Record, {"old": 5, "kept": "y"}) == Record(5, "y")
    assert renamed(Record) == {"old": "new"}
    assert to_json(Selection(subset=4, subset_seed=2)) == {"ids": [], "offset": 0, "sample": 4, "sample_seed": 2}


@pytest.mark.parametrize("argv,former,new", [
    (["run", "--method", "cot", "--sample", "3"], "--sample", "--subset"),
    (["tree", "--sample-seed", "1"], "--sample-seed", "--subset-seed"),
    (["collect", "--samples", "4"], "--samples", "--joint-actions"),
    (["iterate", "--samples", "4"], "--samples", "--joint-actions"),
])
def test_a_former_flag_is_refused_naming_the_new_one(tmp_path, capsys, argv, former, new):
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--backend", "scripted", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and f"{former} is now {new}" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_the_new_flags_run_and_config_json_keeps_its_keys(tmp_path):
    out = tmp_path / "run"
    assert main(["run", "--method", "cot", "--backend", "scripted", "--subset", "3", "--subset-seed", "1",
                 "--out", str(out), "--quiet"]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["selection"] == {"ids": [], "offset": 0, "sample": 3, "sample_seed": 1}
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 3


def test_an_experiment_file_with_the_former_key_is_refused_naming_the_new_one(tmp_path):
    raw = {"name": "x", "methods": ["cot"], "benchmarks": ["gsm8k"], "backend": {"name": "scripted"},
           "out": str(tmp_path), "selection": {"sample": 2}}
    with pytest.raises(DelibError, match=r"key in \[selection\] 'sample' is now 'subset'"):
        parse_experiment(raw)
    with pytest.raises(DelibError, match=r"key in \[selection.gsm8k\] 'sample_seed' is now 'subset_seed'"):
        parse_experiment({**raw, "selection": {"gsm8k": {"sample_seed": 2}}})


@pytest.mark.parametrize("name", ["gsm8k-train", "gsm8k-train-1.5b"])
def test_a_committed_rollout_manifest_reads_its_joint_actions_and_writes_back_unchanged(name):
    text = (ROLLOUTS / name / "manifest.json").read_text()
    manifest = manifest_of(json.loads(text))
    assert manifest.joint_actions == json.loads(text)["samples"] >= 2
    assert manifest.to_dict() == json.loads(text)
