"""experiments/policy_trees_settings.py on the committed comparisons of docs/results/policy-trees: each arm's
accuracy at a larger team or more rounds, paired with itself at the base setting, must agree with what
`delib compare` wrote in each comparison's team.json (two computations of the same numbers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts import script

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "docs" / "results" / "policy-trees"


@pytest.fixture(scope="module")
def tool():
    with script("experiments/policy_trees_settings.py") as module:
        yield module


def accuracies(name: str) -> dict[str, tuple[float, int]]:
    """Arm label -> (accuracy, n) as `delib compare` wrote them in the comparison's team.json."""
    team = json.loads((RESULTS / "compare" / name / "team.json").read_text())
    return {r["label"]: (r["accuracy"], r["n"]) for r in team["rows"]}


def test_each_setting_is_read_from_its_runs_not_from_its_folder_name(tool):
    found = {s.folder: s for s in tool.settings(RESULTS)}
    assert tool.settings(RESULTS)[0] == tool.Setting("main", 3, 1)
    assert found["depth-2"] == tool.Setting("depth-2", 3, 2) and found["depth-2"].label == "3 agents, 2 rounds"
    for name, at in found.items():
        config = next((RESULTS / "compare" / name).glob("*/*/config.json"))
        assert at.agents == json.loads(config.read_text())["engine"]["agents"]


def test_each_setting_pairs_every_shared_arm_with_itself_and_matches_team_json(tool):
    found = tool.settings(RESULTS)
    base = tool.arms(RESULTS, "main")
    for at in found[1:]:
        rows = tool.paired_rows(base, tool.arms(RESULTS, at.folder), at, found[0])
        at_setting, at_base = accuracies(at.folder), accuracies("main")
        assert rows, f"no arm of {at.folder} is shared with main"
        for p in rows:
            label = p.label.split(" @ ")[0]
            assert p.reference == label and p.n + p.unpaired == at_base[label][1]  # its questions are the base's
            assert ((p.both_right + p.only_row) / p.n, p.n) == pytest.approx(at_setting[label])
            if p.n == at_base[label][1]:  # a store of fewer questions pairs on a subset of the base's
                assert (p.both_right + p.only_reference) / p.n == pytest.approx(at_base[label][0])


def test_the_one_round_oracle_is_left_out_of_the_depth_rows_only(tool):
    base_setting = tool.settings(RESULTS)[0]
    base = tool.arms(RESULTS, "main")
    deeper = tool.paired_rows(base, tool.arms(RESULTS, "depth-2"), tool.Setting("depth-2", 3, 2), base_setting)
    assert "oracle" in tool.arms(RESULTS, "depth-2")
    assert deeper and all(not p.label.startswith("oracle @") for p in deeper)
    wider = tool.paired_rows(base, base, tool.Setting("team-x", 5, 1), base_setting)
    assert any(p.label.startswith("oracle @ 5 agents, 1 round") for p in wider)
