"""Committed results replay: every run of the committed state-and-actions table on the 1.5B MATH training store
(`docs/results/state-actions/`), replayed offline from the committed store with the settings its config.json
records, gives the committed episodes again.

A change to request keys, prompts, answer extraction, scoring, the policy's features or a method's
arithmetic that would silently move a published number fails here: the committed stores and results must
keep replaying (docs/design.md, section Committed results). The paired experiment's looks replay these
stores' test siblings the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliberation.cli.main import main
from replays import episodes, replay_argv

REPO = Path(__file__).resolve().parents[2]
TABLE = REPO / "docs" / "results" / "state-actions"
STORE = "data/trees/qwen2.5-coder-1.5b/math-train"
RUNS = sorted(p.parent.relative_to(TABLE).as_posix() for part in ("compare", "sampling")
               for p in (TABLE / part / "math-train").glob("**/config.json"))  # the tuning grids are not committed


def test_the_table_has_every_arm_on_the_store():
    assert len(RUNS) >= 20 and {"compare/math-train/policy-3", "sampling/math-train/adaptive/cisc-logprob",
                                "sampling/math-train/resample/agreement-resample"} <= set(RUNS)


@pytest.mark.parametrize("run", RUNS)
def test_a_committed_run_replays_to_its_committed_episodes(run, tmp_path, monkeypatch):
    committed = TABLE / run
    config = json.loads((committed / "config.json").read_text())
    assert config["trees"] == STORE and config["engine"]["rounds"] == 1
    monkeypatch.chdir(REPO)  # a policy's relative path, or a shipped name, reads as when the table was run
    assert main(replay_argv(config, tmp_path / "replay", REPO)) == 0
    assert episodes(tmp_path / "replay") == episodes(committed)
