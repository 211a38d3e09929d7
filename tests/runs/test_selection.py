"""Question selection (--ids, --offset, --subset, --subset-seed, with --limit): which questions run, what
config.json and tree manifests record, resuming the same selection and refusing another."""

from __future__ import annotations

import json

import pytest

from deliberation import benchmarks
from deliberation.benchmarks.selection import load_selected, select
from deliberation.cli.main import main
from deliberation.config import Selection
from deliberation.errors import DelibError
from deliberation.runs.experiment import plan
from deliberation.runs.experiment_file import parse_experiment
from deliberation.types import Example

EXAMPLES = [Example(f"q{i}", f"question {i}", str(i)) for i in range(10)]


def ids(examples):
    return [e.id for e in examples]


def test_ids_offset_and_subset_apply_in_that_order_keeping_the_split_order():
    assert ids(select(EXAMPLES, Selection(ids=("q7", "q2", "q5")), "b")) == ["q2", "q5", "q7"]
    assert ids(select(EXAMPLES, Selection(offset=8), "b")) == ["q8", "q9"]
    assert ids(select(EXAMPLES, Selection(ids=("q7", "q2", "q5"), offset=1), "b")) == ["q5", "q7"]
    sampled = ids(select(EXAMPLES, Selection(subset=4, subset_seed=3), "b"))
    assert len(sampled) == 4 and sampled == sorted(sampled, key=lambda i: int(i[1:]))
    assert sampled == ids(select(EXAMPLES, Selection(subset=4, subset_seed=3), "b"))
    assert sampled != ids(select(EXAMPLES, Selection(subset=4, subset_seed=4), "b"))
    assert set(sampled) <= set(ids(select(EXAMPLES, Selection(subset=7, subset_seed=3), "b")))


@pytest.mark.parametrize("selection, message", [
    (lambda: Selection(ids=("q1", "nope")), "--ids: 'nope' not in b (its ids look like 'q0')"),
    (lambda: Selection(offset=10), "the selection keeps no question of b"),
    (lambda: Selection(ids=("q1", "q1")), "--ids names 'q1' twice"),
    (lambda: Selection(offset=-1), "--offset must be at least 0"),
    (lambda: Selection(subset=0), "--subset must be at least 1"),
])
def test_bad_selections_are_one_line_errors(selection, message):
    with pytest.raises(DelibError, match=message.replace("(", r"\(").replace(")", r"\)")):
        select(EXAMPLES, selection(), "b")


def test_limit_comes_last_so_a_larger_limit_extends_the_same_selection():
    bench = benchmarks.get("gsm8k")
    chosen = Selection(subset=20, subset_seed=1)
    assert load_selected(bench, "test", 3, chosen) == load_selected(bench, "test", 6, chosen)[:3]
    assert load_selected(bench, "test", 4, Selection()) == bench.load("test", limit=4)


def run(tmp_path, out, *args):
    return main(["run", "--method", "cot", "--backend", "scripted", "--quiet", "--out", str(tmp_path / out), *args])


def episode_ids(path):
    return [json.loads(line)["example_id"] for line in (path / "episodes.jsonl").read_text().splitlines()]


def test_offset_and_ids_pick_the_questions_and_config_json_records_them(tmp_path):
    first = [e.id for e in benchmarks.get("gsm8k").load("test", limit=6)]
    assert run(tmp_path, "off", "--offset", "2", "--limit", "3") == 0
    assert episode_ids(tmp_path / "off") == first[2:5]
    config = json.loads((tmp_path / "off" / "config.json").read_text())
    assert config["selection"] == {"ids": [], "offset": 2, "sample": None, "sample_seed": 0}
    (tmp_path / "ids.txt").write_text(f"{first[4]}\n{first[1]}, {first[5]}\n")
    assert run(tmp_path, "ids", "--ids", f"@{tmp_path / 'ids.txt'}") == 0
    assert episode_ids(tmp_path / "ids") == [first[1], first[4], first[5]]
    assert run(tmp_path, "ids2", "--ids", f"{first[5]},{first[1]}") == 0
    assert episode_ids(tmp_path / "ids2") == [first[1], first[5]]


def test_subset_is_seeded_and_a_rerun_with_a_larger_limit_continues(tmp_path):
    assert run(tmp_path, "s", "--subset", "6", "--subset-seed", "2", "--limit", "2") == 0
    two = episode_ids(tmp_path / "s")
    assert run(tmp_path, "s", "--subset", "6", "--subset-seed", "2", "--limit", "4") == 0
    four = episode_ids(tmp_path / "s")
    assert four[:2] == two and len(four) == 4 == len(set(four))
    expected = load_selected(benchmarks.get("gsm8k"), "test", 4, Selection(subset=6, subset_seed=2))
    assert four == [e.id for e in expected]


@pytest.mark.parametrize("other", [["--subset", "6", "--subset-seed", "3"], ["--offset", "1"], []])
def test_another_selection_in_the_same_run_directory_is_refused(tmp_path, capsys, other):
    assert run(tmp_path, "s", "--subset", "6", "--subset-seed", "2", "--limit", "2") == 0
    before = (tmp_path / "s" / "episodes.jsonl").read_text()
    assert run(tmp_path, "s", "--limit", "2", *other) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("delib: error: ") and "holds a run with other settings (selection)" in err
    assert (tmp_path / "s" / "episodes.jsonl").read_text() == before


def test_a_run_directory_from_before_selections_resumes_without_one(tmp_path):
    assert run(tmp_path, "old", "--limit", "2") == 0
    config_path = tmp_path / "old" / "config.json"
    config = json.loads(config_path.read_text())
    del config["selection"]
    config_path.write_text(json.dumps(config))
    assert run(tmp_path, "old", "--limit", "3") == 0 and len(episode_ids(tmp_path / "old")) == 3
    assert run(tmp_path, "old", "--limit", "3", "--offset", "1") == 2


def tree(tmp_path, *args):
    return main(["tree", "--backend", "scripted", "--quiet", "--agents", "2", "--out", str(tmp_path / "store"),
                 *args])


def test_tree_records_its_selection_and_replays_exactly_those_questions(tmp_path, capsys):
    first = [e.id for e in benchmarks.get("gsm8k").load("test", limit=8)]
    assert tree(tmp_path, "--ids", f"{first[6]},{first[3]},{first[7]}", "--limit", "2") == 0
    manifest = json.loads((tmp_path / "store" / "manifest.json").read_text())
    assert manifest["selection"]["ids"] == [first[6], first[3], first[7]]
    assert tree(tmp_path, "--ids", f"{first[6]},{first[3]},{first[7]}") == 0  # resumes: one more question
    assert main(["evaluate", "--trees", str(tmp_path / "store"), "--method", "agreement-threshold", "--offline",
                 "--rounds", "1", "--quiet", "--out", str(tmp_path / "replay")]) == 0
    assert episode_ids(tmp_path / "replay") == [first[3], first[6], first[7]]
    assert main(["run", "--method", "agreement-threshold", "--backend", "scripted", "--agents", "2", "--rounds", "1",
                 "--quiet", "--ids", f"{first[6]},{first[3]},{first[7]}", "--out", str(tmp_path / "online")]) == 0
    replayed = (tmp_path / "replay" / "episodes.jsonl").read_text().splitlines()
    online = (tmp_path / "online" / "episodes.jsonl").read_text().splitlines()
    turns = lambda line: [{k: v for k, v in t.items() if k != "cached"} for t in json.loads(line)["turns"]]  # noqa
    assert [turns(x) for x in replayed] == [turns(x) for x in online]  # a replay serves every call from the store
    capsys.readouterr()
    assert tree(tmp_path, "--offset", "1", "--limit", "2") == 2
    assert "holds trees of another question selection" in capsys.readouterr().err


def test_a_tree_store_without_a_selection_keeps_its_manifest_format(tmp_path):
    assert tree(tmp_path, "--limit", "2") == 0
    assert "selection" not in json.loads((tmp_path / "store" / "manifest.json").read_text())


def test_experiment_files_select_per_benchmark(tmp_path):
    raw = {"name": "sel", "methods": ["cot"], "benchmarks": ["gsm8k", "mmlu"], "limit": 3,
           "selection": {"subset": 10, "subset_seed": 4, "gsm8k": {"ids": ["gsm8k/test/5"], "subset": 1}},
           "backend": {"name": "scripted"}, "out": str(tmp_path)}
    cells = {c.benchmark: c.spec.selection for c in plan(parse_experiment(raw))}
    assert cells == {"gsm8k": Selection(ids=("gsm8k/test/5",), subset=1, subset_seed=4),
                     "mmlu": Selection(subset=10, subset_seed=4)}
    with pytest.raises(DelibError, match=r"unknown key in \[selection\] 'math'"):
        parse_experiment({**raw, "selection": {"math": {"offset": 1}}})
    with pytest.raises(DelibError, match=r"\[selection.gsm8k\]: --offset must be at least 0"):
        parse_experiment({**raw, "selection": {"offset": -2}})
