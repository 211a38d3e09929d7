"""experiments/vote_keys.py: MATH votes key answers more finely than math-verify's equality. The script finds
the pools where that splits equal answers, and the episodes whose verdict it changes: on synthetic
episodes, and on the committed 1.5B MATH training store, where it changes the best rule's vote on
math/train/39 (docs/results/vote-keys/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliberation.cli.main import main
from deliberation.errors import DelibError
from deliberation.report.loading import read_episodes
from deliberation.runs.run_config import RunSpec
from deliberation.types import to_json
from scripts import script

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def vote_keys():
    with script("experiments/vote_keys.py") as module:
        yield module


def turn(agent: int, round_: int, boxed: str, key: str | None, correct: bool) -> dict:
    """A turn as episodes.jsonl holds it (round 1 turns refine)."""
    return {"agent": agent, "round": round_, "action": "refine" if round_ else None, "answer": key,
            "text": f"So \\boxed{{{boxed}}}.", "confidence": None, "correct": correct}


def episode(example_id: str, correct: bool, *turns: dict) -> dict:
    return {"example_id": example_id, "method": "m", "final_answer": None, "correct": correct, "turns": list(turns)}


def run_config(method: str) -> dict:
    """config.json of a run of ``method`` on MATH."""
    return to_json(RunSpec(method=method, benchmark="math", backend="scripted"))


def run_of(folder: Path, method: str, *episodes: dict) -> Path:
    """A run directory as `delib evaluate` leaves it, as far as the script reads one."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(run_config(method)))
    (folder / "episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episodes))
    return folder


def test_equal_answers_under_different_keys_are_one_class_and_a_tie_they_lose_is_a_changed_verdict(vote_keys, tmp_path):
    """Three singleton keys tie and the first agent's wrong answer wins; math-verify's classes give the two
    right forms a majority: "changed". A pool whose keys already match its classes is not reported."""
    split = episode("q1", False, turn(0, 0, "1", "1", False), turn(0, 1, "-56x^2", "-56*x**2", False),
                    turn(1, 1, "7(x-3)(x+3)", "7*(x - 3)*(x + 3)", True), turn(2, 1, "7(x^2-9)", "7*(x**2 - 9)", True))
    plain = episode("q2", True, turn(0, 0, "2", "2", True), turn(1, 0, "2", "2", True), turn(2, 0, "3", "3", False))
    tie = episode("q3", True, turn(0, 0, "\\frac{1}{2}", "1/2", True), turn(1, 0, "0.5", "0.5000", True),
                  turn(2, 0, "4", "4", False), turn(3, 0, "2^2", "2**2", False))
    run = run_of(tmp_path / "run", "agreement-resample", split, plain, tie)
    ballots = vote_keys.voted(read_episodes(run / "episodes.jsonl")[0])
    assert [(t.agent, t.round) for t in ballots] == [(0, 1), (1, 1), (2, 1)]  # each agent's last answer
    assert vote_keys.classes(["7(x-3)(x+3)", "7(x^2-9)", "-56x^2"]) == [0, 0, 1]
    assert vote_keys.check(run) == {"run": str(run), "method": "agreement-resample", "episodes": 3,
                                    "finer": ["q1", "q3"], "changed": ["q1"], "tied": ["q3"]}


def test_an_agent_whose_last_answer_does_not_parse_casts_no_ballot(vote_keys, tmp_path):
    """As in the engine's final vote: its earlier answer is not counted in its place. Here the earlier
    answer would have made the pool finer (0.5 against 1/2) and its class the winner."""
    refined = episode("q1", True, turn(0, 0, "0.5", "0.5000", True), {**turn(0, 1, "", None, False), "text": "no"},
                      turn(1, 1, "\\frac{1}{2}", "1/2", True), turn(2, 1, "4", "4", False))
    run = run_of(tmp_path / "run", "always-refine", refined)
    assert [t.agent for t in vote_keys.voted(read_episodes(run / "episodes.jsonl")[0])] == [1, 2]
    assert vote_keys.check(run)["finer"] == []


@pytest.mark.parametrize("method", ["cisc", "cisc-logprob", "reconcile"])
def test_runs_of_methods_that_weigh_their_ballots_are_refused(vote_keys, tmp_path, method):
    with pytest.raises(DelibError, match=rf"{method} weighs its ballots, so its winner is not the largest group"):
        vote_keys.check(run_of(tmp_path / "run", method))


@pytest.mark.parametrize("config, episodes, message", [
    (None, "", r"is not a run directory \(no config\.json\)"),
    ({"benchmark": "math"}, "", r"config\.json is not a run's config\.json \(it lacks split, backend, "),
    (run_config("mpdf"), "", "holds no episodes"),
    (run_config("mpdf"), '{"example_id": 1}\n', r"episodes\.jsonl")])
def test_a_folder_that_is_not_a_run_is_one_clear_error(vote_keys, tmp_path, config, episodes, message):
    if config is not None:
        (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "episodes.jsonl").write_text(episodes)
    with pytest.raises(DelibError, match=message) as err:
        vote_keys.check(tmp_path)
    assert "\n" not in str(err.value)


def test_the_committed_measurement_replays_for_the_best_rule(vote_keys, tmp_path):
    """docs/results/vote-keys/math-train.jsonl's line of the best rule, measured again from the committed store."""
    out = tmp_path / "agreement-resample"
    assert main(["evaluate", "--trees", str(REPO / "data/trees/qwen2.5-coder-1.5b/math-train"), "--method",
                 "agreement-resample", "--rounds", "1", "--offline", "--quiet", "--out", str(out)]) == 0
    lines = (REPO / "docs/results/vote-keys/math-train.jsonl").read_text().splitlines()
    committed = [json.loads(line) for line in lines]
    rule = next(line for line in committed if line["method"] == "agreement-resample")
    assert {**vote_keys.check(out), "run": rule["run"]} == rule
    assert rule["changed"] == ["math/train/39"] and rule["tied"] == []
