"""What a new update-prompt style costs: one ``UpdateStyle`` entry. A method using it runs end to
end on the scripted backend and replays offline from a tree store built for it, with no reader changed:
requests carry their ``types.Purpose``, so nothing parses the prompt text back. The style's heading names
no "other agents", the words the readers once searched the prompt for (they then saw no peers, silently)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deliberation import methods
from deliberation.cli.main import main
from deliberation.engine.prompts import UpdateStyle
from deliberation.engine.spec import MethodSpec
from deliberation.methods.base import fixed
from deliberation.policy.rules import ConstantPolicy
from deliberation.trees.store import TreeStore
from deliberation.actions import Action
from replays import episodes

CRITIQUE = UpdateStyle(
    "critique", "Answers to weigh",
    "Name the first wrong step in any answer above, if there is one, then write a complete solution and state "
    "the final answer in the same format as asked in the problem.")
METHOD = fixed(MethodSpec(name="critique", policy=ConstantPolicy(Action.REFINE), update=CRITIQUE))
QUESTIONS = 12
ONLY_PEERS_FIX = ("--backend-opt", "p_fix=0", "--backend-opt", "p_break=0")
"""The simulator then fixes a wrong answer only through its bonus for right peers, so a fix shows the peers
reached it; a right answer never breaks."""


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The method's registry line (a real one goes into ``methods.METHODS``)."""
    monkeypatch.setitem(methods.METHODS.table, "critique", f"{__name__}:METHOD")


def delib(*argv: str) -> None:
    assert main([*argv, "--quiet"]) == 0


def fixes(rows: list[dict]) -> int:
    """Agents wrong at round 0 and right after their update."""
    wrong = {(r["example_id"], t["agent"]) for r in rows for t in r["turns"] if t["round"] == 0 and not t["correct"]}
    return sum((r["example_id"], t["agent"]) in wrong for r in rows for t in r["turns"] if t["round"] == 1
               and t["correct"])


def test_a_method_with_a_new_update_style_runs_and_replays_from_its_tree_store(tmp_path: Path) -> None:
    run, store, replay = tmp_path / "run", tmp_path / "store", tmp_path / "replay"
    delib("run", "--method", "critique", "--backend", "scripted", "--limit", str(QUESTIONS), "--rounds", "1",
          "--no-early-stop", "--out", str(run), *ONLY_PEERS_FIX)
    delib("tree", "--backend", "scripted", "--limit", str(QUESTIONS), "--methods", "critique", "--out", str(store),
          *ONLY_PEERS_FIX)
    delib("evaluate", "--trees", str(store), "--method", "critique", "--rounds", "1", "--no-early-stop",
          "--offline", "--out", str(replay))
    online = episodes(run)
    assert fixes(online) > 0  # the simulated agents saw their peers under the new heading
    assert episodes(replay) == online
    nodes = TreeStore.open(store).nodes.values()
    assert sum(n.kind == "update" for n in nodes) == 3 * QUESTIONS  # one update per agent and question
