"""``delib tune-rules`` (runs/tune_rules.py) on scripted tree stores: the pre-registered grid is replayed as
``delib evaluate`` replays it, pooled over the stores, and the best is picked by accuracy, then tokens, then
the simpler rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliberation.actions import ACTION_SETS
from deliberation.cli.main import main
from deliberation.errors import DelibError
from deliberation.policy.rules import FIXED_RULES
from deliberation.runs.tune_rules import (DEFAULT_GRIDS, GridRow, Rule, Tuning, best, grid, read_best_rule, read_grid,
                                          simplest_first, write_grid)
from deliberation.trees.store import TreeStore
from replays import episodes


def delib(*argv: str) -> int:
    return main([*argv, "--quiet"])


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("stores")
    for bench, n in (("gsm8k", "6"), ("math", "4")):
        assert delib("tree", "--backend", "scripted", "--benchmark", bench, "--split", "train", "--limit", n,
                     "--out", str(root / f"{bench}-train")) == 0
    return [root / "gsm8k-train", root / "math-train"]


def row(method: str, correct: int, tokens: int, threshold: float | None = None, n: int = 10) -> GridRow:
    return GridRow(method, threshold, method, n, correct, tokens, correct / n, tokens / n)


def test_the_grid_is_the_preregistered_one():
    labels = [r.label for r in grid()]
    assert labels[:4] == ["always-persist", "always-refine", "always-concede", "agreement-threshold"]
    for method in ("confidence-threshold", "agreement-then-confidence"):
        assert [r.threshold for r in grid() if r.method == method] == [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
    assert len(labels) == len(set(labels)) == 20
    assert simplest_first() == ["always-persist", "always-refine", "always-concede", "agreement-threshold",
                                "confidence-threshold", "agreement-then-confidence"]  # PREREGISTRATION.md


def test_each_default_grid_names_registered_rules_its_action_set_holds():
    """The default grids are data beside the registry: one per action set, each naming rules that exist and
    take only that set's actions (so --actions paper never replays a RESAMPLE rule)."""
    assert set(DEFAULT_GRIDS) == set(ACTION_SETS)
    for actions, names in DEFAULT_GRIDS.items():
        assert names and all(FIXED_RULES[name].within(actions) for name in names), actions


def test_the_resample_rules_join_the_grid_only_on_request():
    paper, resample = [r.label for r in grid()], [r.label for r in grid("resample")]
    assert [label for label in resample if label not in paper] == ["always-resample", "agreement-resample"]
    assert [label for label in resample if label in paper] == paper
    assert resample.index("always-resample") < resample.index("agreement-threshold")  # a constant is simpler
    with pytest.raises(DelibError, match="unknown actions 'all'"):
        Tuning(trees=("t",), actions="all")


def test_selection_accuracy_then_tokens_then_the_simpler_rule():
    dear_but_right, cheap = row("always-refine", 8, 5000), row("always-persist", 7, 900)
    assert best([cheap, dear_but_right]) is dear_but_right
    fewer = row("agreement-then-confidence", 8, 4000, 0.9)
    assert best([dear_but_right, fewer]) is fewer
    simpler = row("confidence-threshold", 8, 4000, 0.9)
    assert best([fewer, simpler]) is simpler and best([simpler, fewer]) is simpler
    agreement = row("agreement-threshold", 8, 4000)
    assert best([simpler, agreement]) is agreement
    assert best([row("always-concede", 8, 4000), agreement]).method == "always-concede"
    low, high = row("confidence-threshold", 8, 4000, 0.3), row("confidence-threshold", 8, 4000, 0.95)
    assert best([high, low]) is low


def test_equal_counts_tie_exactly_whatever_the_float_rounding():
    """7/30 pooled from two stores and 7/30 from one: equal fractions tie on accuracy and tokens (the
    floats may differ in the last bit), so the simpler rule wins."""
    a = GridRow("confidence-threshold", 0.5, "a", 30, 7, 3001, 0.1 + 0.1 + 0.1 - 0.3 + 7 / 30, 3001 / 30)
    b = GridRow("agreement-threshold", None, "b", 30, 7, 3001, 7 / 30, 3001 / 30)
    assert best([a, b]) is b


def independent_best(out: Path, names: list[str]) -> tuple[str, int, int, int]:
    """The best rule recomputed from the run directories' episodes: (label, n, correct, tokens)."""
    found = []
    for rule in grid():
        eps = [json.loads(x) for s in names
               for x in (out / s / rule.variant().directory / "episodes.jsonl").read_text().splitlines()]
        spent = sum(t["prompt_tokens"] + t["completion_tokens"] for e in eps for t in e["turns"])
        found.append((-sum(e["correct"] for e in eps), spent, FIXED_RULES[rule.method].simplicity, rule.threshold or 0,
                      rule.label, len(eps)))
    top = min(found)
    return top[4], top[5], -top[0], top[1]


@pytest.mark.needs_split("gsm8k/train")
def test_delib_tune_rules_replays_the_grid_and_writes_the_best(stores, tmp_path, capsys):
    out = tmp_path / "tuning"
    assert delib("tune-rules", "--trees", ",".join(map(str, stores)), "--out", str(out)) == 0
    printed = capsys.readouterr().out
    names = [s.name for s in stores]
    for name in names:
        cells = {json.loads(p.read_text())["label"] for p in (out / name).glob("*/cell.json")}
        assert cells == {r.label for r in grid()}
    record = read_best_rule(out / "best_rule.json")
    label, n, correct, tokens = independent_best(out, names)
    assert record.label == label and record.n == n == 10 and record.rounds == 2
    assert record.accuracy == correct / n and record.tokens_per_question == tokens / n
    assert record.rule.label == label and len(record.grid) == 20 and record.ids is None
    assert record.trees == tuple(map(str, stores))
    assert record.chosen_by.endswith("(always-persist < always-refine < always-concede < agreement-threshold "
                                        "< confidence-threshold < agreement-then-confidence; lower threshold first)")
    assert f"| {label} (best) |" in printed and "best: " + label in printed


@pytest.mark.needs_split("gsm8k/train")
def test_a_grid_point_equals_delib_evaluate_with_that_threshold(stores, tmp_path):
    out = tmp_path / "tuning"
    assert delib("tune-rules", "--trees", str(stores[0]), "--rounds", "1", "--offline", "--out", str(out)) == 0
    assert delib("evaluate", "--trees", str(stores[0]), "--method", "agreement-then-confidence",
                 "--confidence-threshold", "0.4", "--rounds", "1", "--offline", "--out", str(tmp_path / "e")) == 0
    assert episodes(out / stores[0].name / "agreement-then-confidence-0.4") == episodes(tmp_path / "e")


@pytest.mark.needs_split("gsm8k/train")
def test_bad_stores_are_one_line_errors_and_write_nothing(stores, tmp_path, capsys):
    twin = tmp_path / "other" / stores[0].name
    twin.mkdir(parents=True)
    for trees, says, *more in ((f"{stores[0]},{twin}", "two stores are named"), (str(tmp_path), "not a tree store"),
                               (str(stores[0]), "--rounds must be at least 1 (with no deliberation round", "--rounds",
                                "0")):
        assert delib("tune-rules", "--trees", trees, *more, "--out", str(tmp_path / "t")) == 2
        err = capsys.readouterr().err.strip()
        assert says in err and len(err.splitlines()) == 1
    assert not (tmp_path / "t").exists()


@pytest.mark.needs_split("gsm8k/train")
def test_a_rerun_with_other_settings_is_refused_before_any_replay(stores, tmp_path, capsys):
    """Every folder is checked first: the second store's conflict stops the command before the first store's
    rules are replayed (they used to be replayed and written, then the second store failed)."""
    out = tmp_path / "tuning"
    assert delib("tune-rules", "--trees", str(stores[1]), "--rounds", "1", "--offline", "--out", str(out)) == 0
    capsys.readouterr()
    assert delib("tune-rules", "--trees", f"{stores[0]},{stores[1]}", "--rounds", "2", "--out", str(out)) == 2
    assert "other settings" in capsys.readouterr().err
    assert not (out / stores[0].name).exists()


@pytest.mark.needs_split("gsm8k/train")
def test_ids_no_store_has_built_are_refused_not_dropped(stores, tmp_path, capsys):
    """--ids are pooled over the stores (one store's ids are the other's): an id neither has built is refused
    before any replay, where the tuning used to run on the others alone; ids across both stores replay."""
    built = [sorted(TreeStore.open(str(s)).built)[0] for s in stores]
    out, trees = tmp_path / "tuning", ",".join(map(str, stores))
    write_grid(tmp_path / "grid.json", [Rule("always-persist")])  # the ids are under test, not the grid
    common = ("--trees", trees, "--offline", "--grid", str(tmp_path / "grid.json"), "--out", str(out))
    assert delib("tune-rules", *common, "--ids", ",".join([*built, "gsm8k/train/99"])) == 2
    assert "--ids names 1 question not among the built questions of " in capsys.readouterr().err
    assert not out.exists()
    assert delib("tune-rules", *common, "--ids", ",".join(built)) == 0
    assert read_best_rule(out / "best_rule.json").n == 2


def test_tune_rules_with_resample_actions_replays_the_resample_rules(tmp_path):
    """A store of 2N round-0 samples serves RESAMPLE offline: ``--actions resample`` tunes the wider grid."""
    store = tmp_path / "wide"
    assert delib("tree", "--backend", "scripted", "--limit", "3", "--samples", "6", "--out", str(store)) == 0
    out = tmp_path / "tuning"
    assert delib("tune-rules", "--trees", str(store), "--rounds", "1", "--offline", "--actions", "resample",
                 "--allow-test", "--out", str(out)) == 0
    record = read_best_rule(out / "best_rule.json")
    assert [row.label for row in record.grid] == [r.label for r in grid("resample")]
    assert {"always-resample", "agreement-resample"} <= {row.method for row in record.grid}
    assert "always-concede < always-resample < agreement-threshold < agreement-resample" in record.chosen_by


PAIRED = Path(__file__).resolve().parents[2] / "docs" / "results" / "paired"


def test_the_registered_grid_is_frozen_and_a_new_rule_does_not_join_it(monkeypatch):
    """The paired experiment's grid is a file beside its registration, equal to the grid best_rule.json
    tuned and to today's default grid; a rule registered later joins neither the frozen grid nor a default
    one (it is tried when a grid names it)."""
    frozen = read_grid(str(PAIRED / "rule_grid.json"))
    tuned = read_best_rule(PAIRED / "best_rule.json").grid
    assert [(r.method, r.threshold) for r in frozen] == [(g.method, g.threshold) for g in tuned]
    before = {actions: grid(actions) for actions in ("paper", "resample")}
    monkeypatch.setitem(FIXED_RULES.table, "always-persist-too", FIXED_RULES["always-persist"])
    assert {actions: grid(actions) for actions in ("paper", "resample")} == before
    assert grid("resample") == frozen  # the paired experiment tuned under --actions resample


def test_tune_rules_with_a_frozen_grid_replays_exactly_its_rules(stores, tmp_path, capsys):
    write_grid(tmp_path / "grid.json", [Rule("always-persist"), Rule("confidence-threshold", 0.6)])
    trees = ",".join(map(str, stores))
    assert delib("tune-rules", "--trees", trees, "--grid", str(tmp_path / "grid.json"), "--rounds", "1",
                 "--offline", "--out", str(tmp_path / "out")) == 0
    record = read_best_rule(tmp_path / "out" / "best_rule.json")
    assert [g.label for g in record.grid] == ["always-persist", "confidence-threshold t=0.6"]
    (tmp_path / "bad.json").write_text('[{"method": "telepathy", "threshold": null}]')
    assert delib("tune-rules", "--trees", trees, "--grid", str(tmp_path / "bad.json"), "--out",
                 str(tmp_path / "bad")) == 2
    assert "unknown one (telepathy)" in capsys.readouterr().err and not (tmp_path / "bad").exists()


@pytest.mark.parametrize("change, says", [
    ({"grid": [{"method": "always-persist"}]}, "BestRule.grid: GridRow record is missing field(s) threshold"),
    ({"trees": "gsm8k-train"}, "BestRule.trees: a JSON text where a list belongs"),
    ({"n": "150"}, "BestRule.n: a JSON text where a int belongs"),
    ({"chosen_by": None, "label": None, "accuracy": "high"}, "BestRule.accuracy"),
])
def test_a_best_rule_json_of_another_shape_is_one_line_naming_it_and_the_fix(tmp_path, change, says):
    """``delib compare`` and the experiments read best_rule.json through ``read_best_rule``: a field missing or of
    another type, a rule that is not registered or lacks its threshold, or no JSON at all is refused in one line."""
    tuned = json.loads((PAIRED / "best_rule.json").read_text())
    path = tmp_path / "best_rule.json"
    path.write_text(json.dumps({**tuned, **change}))
    fix = "; pass the best_rule.json `delib tune-rules` wrote"
    with pytest.raises(DelibError) as refused:
        read_best_rule(path)
    message = str(refused.value)
    assert message.startswith(f"{path} is not a best_rule.json of `delib tune-rules` (") and says in message
    assert message.endswith(fix) and "\n" not in message
    missing = {k: v for k, v in tuned.items() if k != "grid"}
    path.write_text(json.dumps(missing))
    with pytest.raises(DelibError, match=r"\(BestRule record is missing field\(s\) grid\)"):
        read_best_rule(path)
    for method, threshold in (("telepathy", None), ("confidence-threshold", None), ("always-persist", 0.5)):
        path.write_text(json.dumps({**tuned, "method": method, "threshold": threshold}))
        with pytest.raises(DelibError, match=rf"names no tuned rule \(method '{method}', threshold {threshold}\)"):
            read_best_rule(path)
    path.write_text('{"method": ')
    with pytest.raises(DelibError, match=f"{path} is .*{fix}"):
        read_best_rule(path)


@pytest.mark.parametrize("text, says", [
    ('[{"method": "always-persist"}]', "is not a rule grid (each entry an object with a method name and a threshold"),
    ('{"method": "always-persist", "threshold": null}', "is not a rule grid"),
    ('[{"method": "confidence-threshold", "threshold": "high"}]', "is not a rule grid"),
    ('[{"method": "always-persist", "threshold": null}, {"method": "always-persist", "threshold": null}]',
     "names always-persist twice; name each rule once"),
    ('[{"method": "confidence-threshold", "threshold": 7}]', "rule confidence-threshold t=7.0: must be a finite "
                                                             "number, from 0 to 1"),
    (None, "is a folder, not a file"),
    ("", "the rule grid's path is empty"),
])
def test_a_grid_of_another_shape_is_one_line_naming_what_is_wrong(tmp_path, text, says):
    path = tmp_path / "grid.json"
    if text is None:
        path.mkdir()
    elif text:
        path.write_text(text)
    with pytest.raises(DelibError) as found:
        read_grid(str(path) if text != "" else "")
    assert says in str(found.value) and "\n" not in str(found.value)


@pytest.mark.needs_split("gsm8k/train")
def test_a_rerun_asking_fewer_questions_is_refused_not_ranked_on_the_earlier_ones(stores, tmp_path, capsys):
    """The grid is ranked by each replay's summary, which counts every episode its folder holds: a rerun with a
    smaller --questions into the same --out would rank the rules on questions it did not ask for."""
    out = str(tmp_path / "t")
    assert delib("tune-rules", "--trees", str(stores[0]), "--questions", "3", "--offline", "--out", out) == 0
    assert delib("tune-rules", "--trees", str(stores[0]), "--questions", "2", "--offline", "--out", out) == 2
    err = capsys.readouterr().err
    assert "holds replays of 1 questions this replay does not ask for (e.g. gsm8k/train/2: an earlier, larger " \
           "--questions or --ids); pass another --out" in err
    assert delib("tune-rules", "--trees", str(stores[0]), "--questions", "4", "--offline", "--out", out) == 0
