"""The paired experiment's committed looks (docs/results/paired/), held to what they claim. For every look
recorded in summary.json: every arm's episodes hold the look's questions of each benchmark, the same ids,
each once; the record's n and correct per arm and benchmark are those of its episodes; looks.md is rendered
from the records, not typed; and every arm of the last look replays, on the first questions of each test store,
to its committed episodes (the stores only grow, so a later block or more samples leave them as they were).
The same holds for the two-round secondary of the look that stopped the design (look-K/rounds-2/,
experiments/paired_two_rounds.sh)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from deliberation.cli.main import main
from deliberation.report.loading import load_runs
from deliberation.report.paired import POOLED
from deliberation.trees.store import TreeStore, split_examples

from looks.markdown import looks_markdown
from replays import episodes, replay_argv

pytestmark = pytest.mark.slow  # replays the committed looks from their stores (make test-slow)

REPO = Path(__file__).resolve().parents[2]
PAIRED = REPO / "docs" / "results" / "paired"
LOOKS = json.loads((PAIRED / "summary.json").read_text())["looks"]
SIZES = json.loads((PAIRED / "registered.json").read_text())["block"]["sizes"]
STORES = {"gsm8k": "gsm8k-test", "math": "math-test"}  # benchmark -> its test store, in the block sizes' order
REPLAYED = ("policy-1", "best-rule")  # the primary comparison's two arms, the two-round secondary's (rounds-2/)
FIRST = 5
STOPPED = [record for record in LOOKS if record["decision"]["stop"]]  # a look that stopped runs two rounds
ROUNDS_2 = "rounds-2"  # its two-round secondary's folder, inside the look's


def runs(look: int) -> list[Path]:
    """Every run directory of look ``look``: the compared arms and the sampling baselines."""
    folder = PAIRED / f"look-{look}"
    return sorted(p.parent for part in ("compare", "sampling") for p in (folder / part).glob("**/episodes.jsonl"))


def ids(run: Path) -> list[str]:
    """The question ids a run answered, in its episodes' order."""
    return [json.loads(line)["example_id"] for line in (run / "episodes.jsonl").read_text().splitlines()]


def first_questions(store: str, n: int) -> list[str]:
    """The ids of the first ``n`` questions of a test store's split: what look K reads of it."""
    return [e.id for e in split_examples(TreeStore.open(REPO / "data/trees/qwen2.5-coder-1.5b" / store), None)[:n]]


@pytest.mark.parametrize("record", LOOKS, ids=lambda record: f"look-{record['look']}")
def test_every_arm_answers_the_looks_questions_each_once(record):
    found = runs(record["look"])
    answered: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for run in found:
        benchmark = json.loads((run / "config.json").read_text())["benchmark"]
        run_ids = ids(run)
        assert len(run_ids) == len(set(run_ids)), f"{run} answers a question twice"
        answered[benchmark].add(tuple(sorted(run_ids)))
    assert len(found) >= 30 and set(answered) == set(STORES)
    for (benchmark, store), size in zip(STORES.items(), SIZES):
        want = tuple(sorted(first_questions(store, record["look"] * size)))
        assert answered[benchmark] == {want}, f"{benchmark}: an arm answers other questions than the look's"


@pytest.mark.parametrize("record", LOOKS, ids=lambda record: f"look-{record['look']}")
def test_the_records_counts_are_the_episodes(record):
    """n and correct of each arm per benchmark in summary.json, against its episodes, by the report's label;
    every arm of the record has runs, and its pooled counts are its benchmarks' summed."""
    folder = PAIRED / f"look-{record['look']}"
    results = load_runs([folder / "compare", folder / "sampling"])  # labels as the look's report gives them
    for result in results:
        rows = [json.loads(line) for line in (result.path / "episodes.jsonl").read_text().splitlines()]
        cell = record["methods"][result.label][f"{result.benchmark}/{result.split}"]
        assert (cell["n"], cell["correct"]) == (len(rows), sum(row["correct"] for row in rows)), result.path
    assert len(results) == len(runs(record["look"]))
    assert set(record["methods"]) == {result.label for result in results}  # no arm without its runs
    for label, cells in record["methods"].items():
        columns = [cell for column, cell in cells.items() if column != POOLED]
        assert (cells[POOLED]["n"], cells[POOLED]["correct"]) == (sum(c["n"] for c in columns),
                                                                  sum(c["correct"] for c in columns)), label


def by_id(run: Path) -> dict[str, dict]:
    """A run's episodes by question id, without the fields that differ between equal runs."""
    return {row["example_id"]: row for row in episodes(run)}


@pytest.mark.parametrize("earlier,later", [(a["look"], b["look"]) for a, b in zip(LOOKS, LOOKS[1:])],
                         ids=lambda look: f"look-{look}")
def test_a_later_look_answers_the_earlier_looks_questions_as_it_did(earlier, later):
    """The stores only grow, so look K+1's replay of look K's questions is look K's, episode for episode: the
    same answers, actions and tokens for every arm both looks ran."""
    folder = PAIRED / f"look-{later}"
    shared = [(run, folder / run.relative_to(PAIRED / f"look-{earlier}")) for run in runs(earlier)]
    assert len(shared) >= 30 and all((pair / "episodes.jsonl").exists() for _, pair in shared)
    for before, after in shared:
        old, new = by_id(before), by_id(after)
        assert len(new) > len(old) and {key: new[key] for key in old} == old, after


def test_looks_md_is_rendered_from_the_records():
    assert (PAIRED / "looks.md").read_text() == looks_markdown(LOOKS)


LAST_RUNS = [*runs(LOOKS[-1]["look"]), *(PAIRED / f"look-{record['look']}" / ROUNDS_2 / store / arm
                                         for record in STOPPED for store in STORES.values() for arm in REPLAYED)]
"""Every run of the last look (its compared arms and sampling baselines) and of the two-round secondary."""


@pytest.mark.parametrize("committed", LAST_RUNS, ids=lambda run: str(run.relative_to(PAIRED)))
def test_every_arm_of_the_last_look_replays_to_its_committed_episodes(committed, tmp_path, monkeypatch):
    """Every arm, at one round and at two: every node the arms read (round-2 nodes the secondary generated
    among them, samples beyond 6 the allocation experiment's extension added beside them) is in the committed
    stores as it was, on the first questions of each."""
    config = json.loads((committed / "config.json").read_text())
    monkeypatch.chdir(REPO)  # the policy's shipped name and the rule's path read as when the look was taken
    assert main(replay_argv(config, tmp_path / "replay", REPO, questions=FIRST)) == 0
    assert episodes(tmp_path / "replay") == episodes(committed)[:FIRST]


@pytest.mark.parametrize("record", STOPPED, ids=lambda record: f"look-{record['look']}")
def test_the_two_round_secondary_answers_the_looks_questions_as_its_record_says(record):
    """The registered two-round secondary (PREREGISTRATION.md, amendment 1, "Rounds") of the look that stopped
    the design: the learned arm and the best rule at two rounds, each answering the look's questions of each
    store once; team.json's n and accuracy per arm and column are its episodes'; and its provenance names the
    look's stores and registration."""
    folder = PAIRED / f"look-{record['look']}" / ROUNDS_2
    team = json.loads((folder / "team.json").read_text())
    assert team["rounds"] == 2 and team["arms"] == "primary"
    cells = {(row["label"], row["column"]): row for row in team["rows"]}
    results = load_runs([folder])
    assert sorted(str(r.path.relative_to(folder)) for r in results) == sorted(
        f"{store}/{arm}" for store in STORES.values() for arm in REPLAYED)
    pooled: dict[str, list[int]] = defaultdict(list)
    for result in results:
        rows = [json.loads(line) for line in (result.path / "episodes.jsonl").read_text().splitlines()]
        store, size = STORES[result.benchmark], dict(zip(STORES, SIZES))[result.benchmark]
        assert json.loads((result.path / "config.json").read_text())["engine"]["rounds"] == 2
        assert sorted(row["example_id"] for row in rows) == sorted(first_questions(store, record["look"] * size))
        cell = cells[(result.label, f"{result.benchmark}/{result.split}")]
        assert cell["n"] == len(rows) and cell["accuracy"] == pytest.approx(
            sum(row["correct"] for row in rows) / len(rows)), result.path
        pooled[result.label] += [row["correct"] for row in rows]
    for label, correct in pooled.items():
        assert (cells[(label, POOLED)]["n"], cells[(label, POOLED)]["accuracy"]) == (
            len(correct), pytest.approx(sum(correct) / len(correct))), label
    kept = json.loads((folder / "provenance.json").read_text())
    assert (kept["stores"], kept["registered"]) == (record["provenance"]["stores"], record["provenance"]["registered"])

