"""The baselines' tables (experiments/baselines_tables.py) on inputs whose answer is known: optimisation.md's
table of the final graphs (the edges a learned graph keeps, the edges pruned, how far its probabilities moved,
which agents its answer depends on) and pooled.md's counts of AFlow ensembles whose reply named no solution
and of Programmers that ran no program."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from deliberation.config import EngineConfig
from deliberation.methods import run_method
from deliberation.protocols.aflow import ENSEMBLE, PROGRAM
from deliberation.protocols.designs import initial, load_graph, save_graph
from deliberation.types import Completion, Example, GenerationRequest, to_json
from scripts import script

RECORD = {"questions": {"benchmark": "gsm8k", "split": "train", "ids": ["gsm8k/train/0"]}}


def row(tmp_path: Path, graph) -> list[str]:
    save_graph(tmp_path / "graph.json", replace(graph, record=RECORD))
    with script("experiments/baselines_tables.py") as tables:
        return tables.final_row(load_graph(str(tmp_path / "graph.json"), graph.kind)).strip("| \n").split(" | ")


def test_a_decision_node_reading_one_agent_without_peers_depends_on_that_agent_alone(tmp_path):
    shape = initial("gptswarm", 3, 1)  # edges 0->1, 0->2, 1->0, 1->2, 2->0, 2->1, 0->D, 1->D, 2->D
    logits = (0.2, -0.1, -0.8, -0.5, 0.9, -0.5, -0.1, -0.7, 0.6)
    cells = row(tmp_path, replace(shape, spatial_logits=logits))
    assert cells[2:4] == ["0->1, 2->0, 2->D", "-"] and cells[4] == "0"
    assert cells[5] == "0.31-0.71" and cells[6] == "2 of 3"  # agents 0 and 1 are not called


def test_an_edge_closing_a_cycle_is_not_kept_and_a_chain_into_the_decision_is_followed(tmp_path):
    shape = initial("gptswarm", 3, 1)
    logits = (0.1, 0.4, -0.7, -0.9, 0.1, -0.4, -0.2, -0.6, 0.8)  # 2->0 would close 0->2->0
    cells = row(tmp_path, replace(shape, spatial_logits=logits))
    assert cells[2] == "0->1, 0->2, 2->D" and cells[6] == "0, 2 of 3"


def test_agentprunes_pruned_edges_are_counted_and_its_decision_reads_every_agent(tmp_path):
    shape = initial("agentprune", 3, 2)
    spatial = (True, True, False, True, True, True)  # 1->0 pruned; 2->0 and 2->1 would close cycles
    temporal = (False,) + (True,) * 8  # 0->0 pruned
    cells = row(tmp_path, replace(shape, spatial_mask=spatial, temporal_mask=temporal,
                                  spatial_logits=(0.0,) * 5 + (2.0,)))
    assert cells[2] == "0->1, 0->2, 1->2" and cells[3].startswith("0->1, 0->2, 1->0") and cells[4] == "2"
    assert cells[5] == "0.50-0.88" and cells[6] == "0, 1, 2 of 3"


GOOD = "```python\ndef solve():\n    return 6 * 7\n```"
BROKEN = "```python\ndef solve():\n    return 6 * undefined_name\n```"


class Operators:
    """Names ``letter`` in an ensemble call's reply, writes the next of ``programs`` when asked for a program,
    solves otherwise."""

    name, model, supports_logprobs, cache_scope = "ops", "m", False, "m"

    def __init__(self, letter: str, programs: Sequence[str]) -> None:
        self.letter, self.programs = letter, list(programs)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        def reply(text: str) -> str:
            if text.startswith(ENSEMBLE):
                return f"They agree.\nLetter: {self.letter}"
            return self.programs.pop(0) if text.startswith(PROGRAM) else "It is 42."
        return [Completion(reply(r.messages[-1].content), 50, 20) for r in requests]


def test_ensembles_naming_no_solution_and_programmers_running_none_are_counted_per_run(tmp_path):
    runs = {"gsm8k": [("B", [GOOD]), ("Z", [BROKEN, GOOD]), ("Z", ["no code"])],  # 5 solutions shown: Z none
            "math": [("D", [BROKEN] * 3), ("E", [BROKEN, BROKEN, GOOD])]}  # 4 shown: E none
    for bench, questions in runs.items():
        folder = tmp_path / "runs" / f"{bench}-test" / f"aflow-{bench}"
        folder.mkdir(parents=True)
        episodes = [run_method(f"aflow-{bench}", Example(f"q{i}", "What is 6 times 7?", "42"),
                               Operators(letter, programs), bench, EngineConfig())
                    for i, (letter, programs) in enumerate(questions)]
        (folder / "episodes.jsonl").write_text("".join(json.dumps(to_json(e)) + "\n" for e in episodes))
    with script("experiments/baselines_tables.py") as tables:
        note = tables.aflow_notes(tmp_path)
        assert tables.aflow_notes(tmp_path / "nothing") == ""  # no AFlow run: no sentence
    assert "in gsm8k-test/aflow-gsm8k: 2 of 3; math-test/aflow-math: 1 of 2 calls." in note
    assert "in gsm8k-test/aflow-gsm8k: 1 and 0 of 3; math-test/aflow-math: 0 and 1 of 2 questions" in note


def test_a_dash_below_a_method_stands_only_for_spending_less_than_one_sample():
    """pooled.md pairs no self-consistency below a method's tokens only where it spends less than one sample on
    every benchmark lacking one; a missing k = 1 run, or one lacking questions, stays an error."""
    column = "gsm8k/test"
    sampling = {column: {1: {"q1": (True, 100), "q2": (True, 100)}, 2: {"q1": (True, 200), "q2": (False, 200)}}}
    cheap = {"q1": (True, 50), "q2": (False, 60)}
    with script("experiments/baselines_tables.py") as tables:
        assert tables.below_one_sample(cheap, sampling, [column])
        assert not tables.below_one_sample(cheap, sampling, [])  # no benchmark named
        assert not tables.below_one_sample({"q1": (True, 150), "q2": (True, 150)}, sampling, [column])
        assert not tables.below_one_sample(cheap, {column: {2: sampling[column][2]}}, [column])  # no k = 1 run
        lacking = {column: {1: {"q1": (True, 100)}, 2: sampling[column][2]}}
        assert not tables.below_one_sample(cheap, lacking, [column])  # k = 1 lacks q2
