"""An --out holding another kind of output (a run, a rollout directory, a tree store, a training directory,
the iterations of `delib iterate`) is refused before anything is written: a folder holding two kinds would be
read as both, each reader taking the half it knows."""

from __future__ import annotations

import pytest

from deliberation.errors import DelibError
from deliberation.outputs.kinds import KINDS, refuse_other_kind

QUESTIONS = b'{"id": "q1", "question": "What is 2 + 2?", "answer": "4"}\n'
OWN = ["--benchmark", "mine.jsonl", "--answer-type", "numeric", "--backend", "scripted", "--limit", "1", "--quiet"]


def test_each_kind_refuses_every_other_and_takes_its_own(tmp_path):
    for kind, mark in KINDS.items():
        folder = tmp_path / mark.replace(".", "-")
        folder.mkdir()
        (folder / mark).write_text("")
        refuse_other_kind(folder, kind)
        for other in (k for k in KINDS if k != kind):
            with pytest.raises(DelibError, match=f"^--out {folder} holds {kind}, not {other}; pass another --out$"):
                refuse_other_kind(folder, other)


COLLECT = ["collect", "--benchmark", "gsm8k", "--split", "train", "--limit", "1", "--joint-actions", "2",
           "--backend", "scripted", "--quiet"]


@pytest.mark.parametrize("command, holds", [
    (["run", "--method", "cot", *OWN], "trees.jsonl.gz"),
    (["run", "--method", "cot", *OWN], "rollouts.jsonl.gz"),
    (["tree", *OWN], "episodes.jsonl"),
    pytest.param(COLLECT, "episodes.jsonl", marks=pytest.mark.needs_split("gsm8k/train")),
])
def test_a_command_refuses_an_out_holding_another_kind(here, refused, command, holds):
    (here / "mine.jsonl").write_bytes(QUESTIONS)
    (here / "taken").mkdir()
    (here / "taken" / holds).write_text("")
    assert "--out taken holds a" in refused(*command, "--out", "taken")


@pytest.mark.parametrize("command, holds, says", [
    (["train", "--algo", "sft", "--out", "o", "--rollouts", "given"], "trees.jsonl.gz",
     "given holds a tree store: not a rollout directory"),
    (["evaluate", "--method", "cot", "--offline", "--out", "o", "--trees", "given"], "rollouts.jsonl.gz",
     "given holds a rollout directory, not a tree store"),
])
def test_a_reader_names_the_kind_a_folder_holds_instead_of_calling_it_damaged(here, refused, command, holds, says):
    (here / "given").mkdir()
    (here / "given" / "manifest.json").write_text("{}")
    (here / "given" / holds).write_text("")
    assert says in refused(*command)
