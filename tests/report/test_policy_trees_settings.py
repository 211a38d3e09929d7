"""experiments/policy_trees_settings.py on the committed comparisons of docs/results/policy-trees: each arm's
accuracy at a larger team or more rounds, paired with itself at the base setting, must agree with what
`delib compare` wrote in each comparison's team.json (two computations of the same numbers)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "docs" / "results" / "policy-trees"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("policy_trees_settings",
                                                  REPO / "experiments" / "policy_trees_settings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def accuracies(name: str) -> dict[str, tuple[float, int]]:
    """Arm label -> (accuracy, n) as `delib compare` wrote them in the comparison's team.json."""
    team = json.loads((RESULTS / "compare" / name / "team.json").read_text())
    return {r["label"]: (r["accuracy"], r["n"]) for r in team["rows"]}


def test_the_base_is_three_agents_at_one_round_and_every_other_setting_is_found(script):
    found = script.settings(RESULTS)
    assert found[0] == ("main", "3 agents, 1 round")
    assert ("depth-2", "3 agents, 2 rounds") in found


def test_each_setting_pairs_every_shared_arm_with_itself_and_matches_team_json(script):
    base = script.arms(RESULTS, "main")
    for name, setting in script.settings(RESULTS)[1:]:
        rows = script.paired_rows(base, script.arms(RESULTS, name), setting)
        at_setting, at_base = accuracies(name), accuracies("main")
        assert rows, f"no arm of {name} is shared with main"
        for p in rows:
            label = p.label.split(" @ ")[0]
            assert p.reference == label and p.n + p.unpaired == at_base[label][1]  # its questions are among the base's
            assert ((p.both_right + p.only_row) / p.n, p.n) == pytest.approx(at_setting[label])
            if p.n == at_base[label][1]:  # a store of fewer questions pairs on a subset of the base's
                assert (p.both_right + p.only_reference) / p.n == pytest.approx(at_base[label][0])


def test_the_one_round_oracle_is_left_out_of_the_depth_rows_only(script):
    base = script.arms(RESULTS, "main")
    deeper = script.paired_rows(base, script.arms(RESULTS, "depth-2"), "3 agents, 2 rounds")
    assert "oracle" in script.arms(RESULTS, "depth-2")
    assert all(not p.label.startswith("oracle @") for p in deeper)
    wider = script.paired_rows(base, base, "5 agents, 1 round")
    assert any(p.label.startswith("oracle @") for p in wider)
