"""``delib tune-votes`` (runs/tune_votes.py) on scripted tree stores: each CISC method is replayed at every
temperature of the grid with all the stores' samples, as ``delib evaluate`` replays it, and the T of the
highest pooled accuracy is chosen, ties going to the higher T; the option itself reaches the vote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliberation import methods
from deliberation.cli.main import main
from deliberation.config import EngineConfig
from deliberation.engine.consensus import Ballot, vote
from deliberation.engine.loop import AgentRecord, ballot_weights
from deliberation.errors import DelibError
from deliberation.methods.base import MethodConfig
from deliberation.runs.tune_votes import TEMPERATURES, VoteRow, best, grid
from replays import episodes



def delib(*argv: str) -> int:
    return main([*argv, "--quiet"])


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> list[Path]:
    """Two scripted stores with 5 round-0 samples a question (the team's 3 and 2 more)."""
    root = tmp_path_factory.mktemp("stores")
    for bench, n in (("gsm8k", "6"), ("math", "4")):
        built = root / f"{bench}-train"
        assert delib("tree", "--backend", "scripted", "--benchmark", bench, "--split", "train", "--limit", n,
                     "--samples", "5", "--methods", "mpdf", "--out", str(built)) == 0
    return [root / "gsm8k-train", root / "math-train"]


def row(temperature: float, correct: int, n: int = 10) -> VoteRow:
    return VoteRow("cisc", temperature, n, correct, correct / n, 1000.0, {})


def test_the_grid_covers_both_cisc_methods_at_every_temperature():
    assert sorted({v.method for v in grid()}) == ["cisc", "cisc-logprob"] == sorted(methods.taking("vote_temperature"))
    assert [v.vote_temperature for v in grid() if v.method == "cisc"] == list(TEMPERATURES)
    labels = [v.label for v in grid()]
    assert len(labels) == len(set(labels)) == 2 * len(TEMPERATURES)


def test_selection_accuracy_then_the_higher_temperature():
    assert best([row(0.1, 8), row(3.0, 7)]).temperature == 0.1
    assert best([row(0.1, 8), row(0.3, 8), row(0.03, 8)]).temperature == 0.3
    # equal fractions tie exactly (7/10 and 14/20), so the higher T wins
    assert best([VoteRow("cisc", 1.0, 20, 14, 0.7000000001, 0.0, {}), row(0.01, 7)]).temperature == 1.0


def test_the_option_sets_the_vote_temperature_and_is_checked():
    for name in ("cisc", "cisc-logprob"):
        spec = methods.get(name).spec(MethodConfig(engine=EngineConfig(agents=5), vote_temperature=0.37))
        assert spec.vote_weights is not None and spec.vote_weights.temperature == 0.37
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(DelibError, match="--vote-temperature must be a finite number"):
            MethodConfig(vote_temperature=bad)


def test_the_temperature_changes_which_answer_wins():
    """Two samples answer 7 at P(Yes) 0.9 and three answer 9 at P(Yes) 0.2: through cisc's own spec, a low T
    follows the confident pair and a high T the plain majority."""
    team = [AgentRecord("", key, p, 10, False) for key, p in (("7", 0.9), ("7", 0.9), ("9", 0.2), ("9", 0.2),
                                                                ("9", 0.2))]
    for temperature, winner in ((0.05, "7"), (3.0, "9")):
        spec = methods.get("cisc").spec(MethodConfig(vote_temperature=temperature))
        ballots = [Ballot(r.key, r.confidence, w) for r, w in zip(team, ballot_weights(spec, team))]
        assert vote(ballots) == winner


@pytest.mark.needs_split("gsm8k/train")
def test_delib_tune_votes_replays_the_grid_with_every_sample_and_writes_the_choice(stores, tmp_path, capsys):
    out = tmp_path / "votes"
    assert delib("tune-votes", "--trees", ",".join(map(str, stores)), "--rounds", "1", "--offline",
                 "--out", str(out)) == 0
    printed = capsys.readouterr().out
    record = json.loads((out / "vote_temperatures.json").read_text())
    assert set(record["methods"]) == {"cisc", "cisc-logprob"} and len(record["grid"]) == 2 * len(TEMPERATURES)
    for method, chosen in record["methods"].items():
        found = []
        for t in TEMPERATURES:
            eps = [json.loads(x) for s in stores
                   for x in (out / s.name / f"{method}-T{t}" / "episodes.jsonl").read_text().splitlines()]
            found.append((sum(e["correct"] for e in eps), t, len(eps)))
        correct, t, n = max(found)
        assert chosen == {"vote_temperature": t, "accuracy": correct / n, "n": n} and n == 10
        assert f"{method}: T={t:g}" in printed
    config = json.loads((out / stores[0].name / "cisc-T0.1" / "config.json").read_text())
    assert config["engine"]["agents"] == 5 and config["vote_temperature"] == 0.1  # every sample the store holds


@pytest.mark.needs_split("gsm8k/train")
def test_a_grid_point_equals_delib_evaluate_at_that_temperature(stores, tmp_path):
    out = tmp_path / "votes"
    assert delib("tune-votes", "--trees", str(stores[0]), "--agents", "4", "--rounds", "1", "--offline",
                 "--out", str(out)) == 0
    assert delib("evaluate", "--trees", str(stores[0]), "--method", "cisc-logprob", "--agents", "4",
                 "--vote-temperature", "0.03", "--rounds", "1", "--offline", "--out", str(tmp_path / "e")) == 0
    assert episodes(out / stores[0].name / "cisc-logprob-T0.03") == episodes(tmp_path / "e")


def test_the_option_is_refused_by_methods_that_do_not_read_it(tmp_path, capsys):
    assert delib("run", "--method", "self-consistency", "--backend", "scripted", "--vote-temperature", "0.3",
                 "--limit", "1", "--out", str(tmp_path / "r")) == 2
    err = capsys.readouterr().err.strip()
    assert "vote_temperature" in err.replace("-", "_") and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()
