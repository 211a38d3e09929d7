"""config.json records the engine a method ran beside the one asked for: self-consistency runs no rounds and
cot one agent whatever --rounds and --agents say; a run directory written before the record resumes."""

from __future__ import annotations

import json

import pytest

from deliberation.cli.main import main


def run(tmp_path, method: str, *extra: str) -> dict:
    out = tmp_path / method
    assert main(["run", "--method", method, "--backend", "scripted", "--limit", "2", "--rounds", "2", "--out",
                 str(out), "--quiet", *extra]) == 0
    return json.loads((out / "config.json").read_text())


@pytest.mark.parametrize("method, asked, ran", [
    ("self-consistency", {"rounds": 2, "agents": 5}, {"rounds": 0, "agents": 5}),
    ("cot", {"rounds": 2, "agents": 5}, {"rounds": 0, "agents": 1}),
    ("debate", {"rounds": 2, "agents": 5}, {"rounds": 2, "agents": 5}),
])
def test_the_engine_asked_for_and_the_engine_used(tmp_path, method, asked, ran):
    config = run(tmp_path, method, "--agents", "5")
    assert {k: config["engine"][k] for k in asked} == asked
    assert {k: config["engine_used"][k] for k in ran} == ran


def test_a_run_written_before_the_record_resumes(tmp_path):
    config = run(tmp_path, "self-consistency")
    folder = tmp_path / "self-consistency"
    del config["engine_used"]
    (folder / "config.json").write_text(json.dumps(config))
    assert main(["run", "--method", "self-consistency", "--backend", "scripted", "--limit", "3", "--rounds", "2",
                 "--out", str(folder), "--quiet"]) == 0
    assert len((folder / "episodes.jsonl").read_text().splitlines()) == 3
