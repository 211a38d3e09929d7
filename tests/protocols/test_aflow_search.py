"""AFlow's search on the scripted executor with an optimiser that proposes set modifications: the selection
probabilities are AFlow's formula, a draft that is no workflow or repeats a modification is asked again,
children are scored and recorded with their parent, the best round's workflow is written with the tokens
of both models, the search stops when its top scores stop moving, and workflows that read undefined
variables or make too many calls are refused."""

from __future__ import annotations

import json
from typing import Sequence

import numpy as np
import pytest

from deliberation.cli.main import main
from deliberation.errors import DelibError
from deliberation.protocols.workflow import parse
from deliberation.rl.aflow_search import AFlowSearch, Round, candidates
from deliberation.types import Completion, GenerationRequest

ENSEMBLE = {"steps": [{"op": "custom", "out": "s", "input": ["$problem"], "n": 3},
                      {"op": "sc_ensemble", "out": "best", "from": ["s"]}], "answer": ["best"]}


def test_the_selection_is_afflows_soft_mixed_probability():
    spec = AFlowSearch(split="train", top_k=2, alpha=0.2, mix=0.3)
    blank = parse({"steps": [{"op": "custom", "out": "a"}], "answer": ["a"]})
    rounds = [Round(1, None, blank, "", [0.50]), Round(2, 1, blank, "x", [0.60]), Round(3, 1, blank, "y", [0.40]),
              Round(4, 2, blank, "z", [0.55])]
    found, probs = candidates(rounds, spec)
    assert [r.number for r in found] == [1, 2, 4]  # round 1 and the two best others
    soft = np.exp(0.2 * (np.array([50.0, 60.0, 55.0]) - 60.0))
    assert probs == pytest.approx(0.3 / 3 + 0.7 * soft / soft.sum()) and probs.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("draft, reason", [
    ({"steps": [{"op": "sc_ensemble", "out": "b", "from": ["nothing"]}], "answer": ["b"]}, "before any step"),
    ({"steps": [{"op": "custom", "out": "s", "n": 13}], "answer": ["s"]}, "n must be"),
    ({"steps": [{"op": "custom", "out": "s", "n": 7}, {"op": "custom", "out": "t", "n": 6}], "answer": ["t"]},
     "more than 12"),
    ({"steps": [{"op": "shell", "out": "s"}], "answer": ["s"]}, "needs an op"),
    ({"steps": [{"op": "custom", "out": "s"}, {"op": "sc_ensemble", "out": "b", "from": []}], "answer": ["b"]},
     "needs the variables"),
    ({"steps": [{"op": "custom", "out": "s", "n": 11}, {"op": "sc_ensemble", "out": "b", "from": ["s", "s", "s"]}],
      "answer": ["b"]}, "each once"),  # 33 solutions from 11: letters past Z, and the prompt's "X" one of them
    ({"steps": [{"op": "custom", "out": "s", "n": 10}, {"op": "programmer", "out": "p"}], "answer": ["p"]},
     "13 calls"),  # a programmer counts its three attempts
    ({"steps": [{"op": "custom", "out": "s"}], "answer": ["t"]}, "not all of them defined"),
])
def test_a_workflow_that_cannot_run_is_refused(draft, reason):
    with pytest.raises(ValueError, match=reason):
        parse(draft)


class Optimizer:
    """Proposes: first no workflow, then the ensemble workflow, then the same modification again, then
    'five samples' (a new one), and repeats the last."""

    name, model, supports_logprobs, cache_scope = "opt", "m", False, "m"

    def __init__(self) -> None:
        five = json.loads(json.dumps(ENSEMBLE))
        five["steps"][0]["n"] = 5
        three = f"<modification>ensemble three</modification><workflow>{json.dumps(ENSEMBLE)}</workflow>"
        self.replies = ["no json here", three, three,
                        f"<modification>five samples</modification><workflow>{json.dumps(five)}</workflow>"]
        self.calls = 0

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        reply = self.replies[min(self.calls, len(self.replies) - 1)]
        self.calls += 1
        return [Completion(reply, 100, 40)]

    def close(self) -> None:
        pass


@pytest.fixture
def optimizer(monkeypatch):
    """The backend named "opt" is an ``Optimizer``; every other name is made as usual."""
    from deliberation.rl import aflow_search

    found = Optimizer()
    real = aflow_search.make_backend
    monkeypatch.setattr(aflow_search, "make_backend", lambda name, **kw: found if name == "opt" else real(name, **kw))
    return found


def run_search(tmp_path, **settings) -> dict:
    from deliberation.rl.aflow_search import search

    spec = AFlowSearch(split="train", limit=6, backend="scripted", optimizer_backend="opt", validation_runs=2,
                       cache="none", **settings)
    return json.loads(search(spec, str(tmp_path)).path.read_text())


@pytest.mark.needs_split("gsm8k/train")  # the search runs on GSM8K train questions
def test_the_search_records_children_keeps_the_best_and_counts_both_models(tmp_path, optimizer):
    found = run_search(tmp_path, search_rounds=4)
    rounds, record = found["record"]["rounds"], found["record"]
    assert [r["round"] for r in rounds][:2] == [1, 2] and rounds[1]["modification"] == "ensemble three"
    assert len(rounds) >= 3  # a round whose parent has had every draft the optimiser writes is skipped
    assert all(len(r["scores"]) == 2 for r in rounds)
    for parent in {r["parent"] for r in rounds[1:]}:  # no parent got the same modification twice
        mods = [r["modification"] for r in rounds[1:] if r["parent"] == parent]
        assert len(mods) == len(set(mods))
    best = max(rounds, key=lambda r: (r["mean"], -r["round"]))
    assert record["best_round"] == best["round"] and found["workflow"] == best["workflow"]
    assert record["tokens"]["optimizer"] == [100 * optimizer.calls, 40 * optimizer.calls]
    assert record["tokens"]["executor"][0] > 0 and len(record["questions"]["ids"]) == 6


@pytest.mark.needs_split("gsm8k/train")  # the search runs on GSM8K train questions
def test_a_search_asked_again_over_its_workflow_does_nothing_and_one_asked_otherwise_is_refused(tmp_path, optimizer):
    """workflow.json is what runs used: the same search again leaves it (the optimiser is not asked), another
    one names the setting that differs and overwrites nothing."""
    from deliberation.rl.aflow_search import search

    run_search(tmp_path, search_rounds=3)
    made, calls = (tmp_path / "workflow.json").read_bytes(), optimizer.calls
    same = dict(split="train", limit=6, backend="scripted", optimizer_backend="opt", validation_runs=2)
    assert search(AFlowSearch(**same, cache="none", search_rounds=3, concurrency=2), str(tmp_path)).reused
    assert optimizer.calls == calls and (tmp_path / "workflow.json").read_bytes() == made
    with pytest.raises(DelibError, match=r"holds a workflow with other settings \(settings.search_rounds 3 there, "
                                         r"4 here\); pass another --out, or delete it to search again"):
        search(AFlowSearch(**same, cache="none", search_rounds=4), str(tmp_path))
    assert (tmp_path / "workflow.json").read_bytes() == made


@pytest.mark.needs_split("gsm8k/train")  # the search runs on GSM8K train questions
def test_validation_questions_run_together_and_score_as_one_after_the_other(tmp_path, optimizer, monkeypatch):
    """--concurrency 3 runs the validation questions in flight together (the executor gets larger batches):
    the scripted executor answers a request alike in any batch, so every score, workflow and token count
    equals a sequential search's."""
    from deliberation.rl import aflow_search

    batches: list[int] = []
    made = aflow_search.make_backend

    def recording(name: str, **kw):
        backend = made(name, **kw)
        if name != "opt":
            generate = backend.generate
            backend.generate = lambda requests: batches.append(len(requests)) or generate(requests)
        return backend

    monkeypatch.setattr(aflow_search, "make_backend", recording)
    alone = run_search(tmp_path / "one", search_rounds=3)["record"]
    widest, batches[:] = max(batches), []
    optimizer.calls = 0  # the optimiser proposes the same drafts again
    together = run_search(tmp_path / "three", search_rounds=3, concurrency=3)["record"]
    assert max(batches) > widest
    assert [(r["scores"], r["workflow"]) for r in together["rounds"]] == \
        [(r["scores"], r["workflow"]) for r in alone["rounds"]]
    assert together["tokens"] == alone["tokens"] and together["settings"]["concurrency"] == 3


@pytest.mark.needs_split("gsm8k/train")  # the search runs on GSM8K train questions
def test_the_search_stops_when_its_top_scores_stop_moving(tmp_path, optimizer):
    blank = {"steps": [{"op": "custom", "out": "answer", "instruction": "", "input": ["$problem"]}],
             "answer": ["answer"]}
    optimizer.replies = [f"<modification>idea {i}</modification><workflow>{json.dumps(blank)}</workflow>"
                         for i in range(30)]
    optimizer.generate = lambda requests: [Completion(optimizer.replies.pop(0), 100, 40)]
    rounds = run_search(tmp_path, search_rounds=20, patience=2)["record"]["rounds"]
    assert len(rounds) == 1 + 2  # equal scores: the top unchanged by 2 children in a row


@pytest.mark.needs_split("gsm8k/train")  # the search runs on GSM8K train questions
def test_rounds_without_a_child_are_noted_and_recorded_with_why(tmp_path, optimizer, caplog):
    """Round 2 gets three replies without a workflow, round 3 a valid draft, round 4 an invalid workflow and
    then nothing: rounds 2 and 4 have no child, and are in the record with why, and noted."""
    bad = {"steps": [{"op": "custom", "out": "s"}], "answer": ["t"]}
    replies = ["no json here"] * 3 + [f"<modification>ensemble</modification><workflow>{json.dumps(ENSEMBLE)}"
                                      "</workflow>", f"<modification>x</modification><workflow>{json.dumps(bad)}"
                                      "</workflow>"]
    optimizer.generate = lambda requests: [Completion(replies.pop(0) if replies else "no json here", 100, 40)]
    record = run_search(tmp_path, search_rounds=4)["record"]
    assert [r["round"] for r in record["rounds"]] == [1, 3]
    assert [(f["round"], f["parent"]) for f in record["failed_rounds"]] == [(2, 1), (4, record["failed_rounds"][1]
                                                                                     ["parent"])]
    assert record["failed_rounds"][0]["why"] == "3 drafts, none usable (no <workflow>...</workflow>)"
    assert record["failed_rounds"][1]["why"].startswith("3 drafts, none usable (not a valid workflow: answer names")
    assert "aflow round 2 has no child: 3 drafts" in caplog.text and "aflow round 4 has no child" in caplog.text


@pytest.mark.needs_split("gsm8k/train")  # the search runs on GSM8K train questions
def test_the_cli_refuses_a_search_whose_optimiser_never_wrote_a_workflow(tmp_path, capsys, caplog):
    """The scripted optimiser answers with no workflow: rounds 2 and 3 have no child, the blank workflow is no
    search result, so nothing is written and the message names the optimiser's fault."""
    assert main(["aflow-search", "--backend", "scripted", "--optimizer-backend", "scripted", "--limit", "4",
                 "--search-rounds", "3", "--validation-runs", "1", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "aflow round 2 has no child: 3 drafts, none usable (no <workflow>...</workflow>)" in caplog.text
    assert "the optimiser wrote no valid new workflow in any of rounds 2-3 (round 2: 3 drafts, none usable (no " \
           "<workflow>...</workflow>)); nothing written: check --optimizer-model" in err
    assert not (tmp_path / "workflow.json").exists()


@pytest.mark.needs_split("gsm8k/train")  # the search runs on GSM8K train questions
def test_a_searched_workflow_runs_and_refuses_the_questions_it_was_searched_on(tmp_path, optimizer, capsys):
    run_search(tmp_path, search_rounds=2)
    workflow = str(tmp_path / "workflow.json")
    args = ["run", "--method", "aflow", "--workflow", workflow, "--backend", "scripted", "--limit"]
    assert main([*args, "3", "--split", "train", "--out", str(tmp_path / "train"), "--quiet"]) == 2
    assert "workflow.json was searched on 3 of these questions" in capsys.readouterr().err
    assert not (tmp_path / "train").exists()
    assert main([*args, "2", "--out", str(tmp_path / "test"), "--quiet"]) == 0  # test questions: none searched on
    config = json.loads((tmp_path / "test" / "config.json").read_text())
    summary = json.loads((tmp_path / "test" / "summary.json").read_text())
    spent = sum(sum(pair) for pair in json.loads((tmp_path / "workflow.json").read_text())["record"]["tokens"].values())
    assert config["workflow_used"].startswith(workflow) and summary["n"] == 2 and spent > 0
    assert summary["optimisation_tokens"] == spent  # beside its accuracy, and amortised on its line
    assert f"optimised with {spent:,} tokens ({spent / 2:,.0f} a question over these 2)" in capsys.readouterr().out
    damaged = json.loads((tmp_path / "workflow.json").read_text())
    damaged["record"]["tokens"] = {"executor": "many"}
    (tmp_path / "damaged.json").write_text(json.dumps(damaged))
    assert main([*args[:4], str(tmp_path / "damaged.json"), *args[5:], "2", "--out", str(tmp_path / "d")]) == 2
    assert "damaged.json is a damaged workflow: its record's tokens" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()
