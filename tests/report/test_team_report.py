"""``delib compare`` (report/compare.py) on scripted tree stores: every arm's team-level accuracy and tokens, and
paired numbers equal to ``delib report``'s on the same run directories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliberation.cli.main import main
from deliberation.runs.tune_rules import read_best_rule
from deliberation.trees.store import TreeStore

pytestmark = pytest.mark.needs_split("gsm8k/train")  # its questions come from GSM8K train (no package ships it)


def delib(*argv: str) -> int:
    return main([*argv, "--quiet"])


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("team")
    assert delib("tree", "--backend", "scripted", "--split", "train", "--limit", "8", "--out",
                 str(root / "gsm8k-train")) == 0
    assert delib("tune-rules", "--trees", str(root / "gsm8k-train"), "--rounds", "1",
                 "--out", str(root / "tuning")) == 0
    assert main(["train", "--algo", "sft", "--trees", str(root / "gsm8k-train"), "--epochs", "2", "--out",
                 str(root / "sft")]) == 0
    for bench, n in (("gsm8k", "6"), ("math", "4")):
        assert delib("tree", "--backend", "scripted", "--benchmark", bench, "--limit", n, "--out",
                     str(root / f"{bench}-test")) == 0
    out = root / "compare"
    assert delib("compare", "--trees", f"{root / 'gsm8k-test'},{root / 'math-test'}", "--policy", "default",
                 "--sft", str(root / "sft" / "policy.pt"), "--rule", str(root / "tuning" / "best_rule.json"),
                 "--out", str(out)) == 0
    return {"root": root, "out": out}


def test_the_table_holds_every_arm_per_benchmark_and_pooled(setup):
    team = json.loads((setup["out"] / "team.json").read_text())
    rule = read_best_rule(setup["root"] / "tuning" / "best_rule.json")
    reference = f"best rule: {rule.label}"
    constants = {"always-persist", "always-refine", "always-concede"} - {rule.method}
    labels = {"mpdf [default]", f"sft [{setup['root'] / 'sft' / 'policy.pt'}]", reference, "oracle", *constants}
    assert team["reference"] == reference and {r["label"] for r in team["rows"]} == labels
    assert {(r["label"], r["column"]) for r in team["rows"]} == {
        (label, col) for label in labels for col in ("gsm8k/test", "math/test", "pooled")}
    for r in team["rows"]:
        assert set(r) == {"label", "column", "n", "accuracy", "tokens_per_question"}
        assert r["n"] == {"gsm8k/test": 6, "math/test": 4, "pooled": 10}[r["column"]]
    md = (setup["out"] / "team.md").read_text()
    assert f"## Paired against {reference}" in md and "| oracle | pooled | 10 |" in md


def test_rows_equal_the_run_summaries(setup):
    team = json.loads((setup["out"] / "team.json").read_text())
    for r in (r for r in team["rows"] if r["label"] == "oracle" and r["column"] != "pooled"):
        store = f"{r['column'].split('/')[0]}-test"
        summary = json.loads((setup["out"] / store / "oracle" / "summary.json").read_text())
        assert r["accuracy"] == summary["accuracy"] and r["tokens_per_question"] == summary["tokens_per_question"]


def test_paired_numbers_equal_delib_report_on_the_same_run_directories(setup, tmp_path):
    team = json.loads((setup["out"] / "team.json").read_text())
    runs = [str(setup["out"] / store) for store in ("gsm8k-test", "math-test")]
    assert main(["report", *runs, "--reference", team["reference"], "--out", str(tmp_path / "rep")]) == 0
    paired = json.loads((tmp_path / "rep" / "paired.json").read_text())
    assert team["paired"] == paired and len(paired) == (len({r["label"] for r in team["rows"]}) - 1) * 3
    assert {"mcnemar_p", "accuracy_diff", "accuracy_diff_ci95"} <= set(paired[0])


def test_bad_input_is_one_line_and_writes_nothing(setup, tmp_path, capsys, caplog):
    bad_rule = tmp_path / "rule.json"  # a rule that reads a threshold, without one
    tuned = json.loads((setup["root"] / "tuning" / "best_rule.json").read_text())
    bad_rule.write_text(json.dumps({**tuned, "method": "confidence-threshold", "threshold": None}))
    trees = str(setup["root"] / "gsm8k-test")
    for extra, says in (((), "names no tuned rule"),
                        (("--sft", "default"), "'default' is given twice (--policy and --sft); give each once"),
                        (("--policy", "default,default"), "'default' is given twice (--policy); give each once"),
                        (("--arms", "some"), "unknown arms 'some'; choose one of all, primary"),
                        (("--arms", "primary", "--sft", str(setup["root"] / "sft" / "policy.pt")),
                         "--sft is a row of --arms all only")):
        rule = str(bad_rule) if not extra else str(setup["root"] / "tuning" / "best_rule.json")
        assert delib("compare", "--trees", trees, "--policy", "default", "--rule", rule, *extra,
                     "--out", str(tmp_path / "c")) == 2
        err = capsys.readouterr().err.strip()
        assert says in err and len(err.splitlines()) == 1
    not_one = tmp_path / "config.json"  # no checkpoint: named so, not first warned about its missing split.json
    not_one.write_text("{}")
    with caplog.at_level("WARNING", logger="deliberation"):
        assert delib("compare", "--trees", trees, "--policy", str(not_one), "--rule",
                     str(setup["root"] / "tuning" / "best_rule.json"), "--out", str(tmp_path / "c")) == 2
    err = capsys.readouterr().err.strip()
    assert "is not a deliberation policy checkpoint" in err and len(err.splitlines()) == 1, err
    assert f"cannot check that {not_one}" not in caplog.text
    assert not (tmp_path / "c").exists()


def test_the_figure_is_written_and_named_in_team_md(setup):
    from deliberation.report.compare_plot import short_label

    png = setup["out"] / "team.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![paired difference to the best rule](team.png)" in (setup["out"] / "team.md").read_text()
    assert short_label("mpdf [runs/x/softrankpo-full/policy.pt]") == "mpdf [x/softrankpo-full]"
    assert short_label("sft [docs/results/paired/sft.pt]") == "sft [paired/sft]"
    assert short_label("mpdf [policy.pt]") == "mpdf [policy.pt]" and short_label("sft [sft.pt]") == "sft [sft]"
    assert short_label("mpdf [default]") == "mpdf [default]" and short_label("oracle") == "oracle"


def test_stores_the_rule_or_a_policy_saw_are_refused(setup, tmp_path, capsys):
    root = setup["root"]
    rule = str(root / "tuning" / "best_rule.json")
    assert delib("compare", "--trees", str(root / "gsm8k-train"), "--policy", "default", "--rule", rule,
                 "--out", str(tmp_path / "tuned")) == 2
    err = capsys.readouterr().err.strip()
    assert "gsm8k/train/0" in err and "the rule was tuned on" in err and not (tmp_path / "tuned").exists()
    assert main(["train", "--algo", "sft", "--trees", str(root / "math-test"), "--allow-test", "--epochs", "1",
                 "--val-fraction", "0", "--out", str(tmp_path / "leaky")]) == 0
    capsys.readouterr()
    assert delib("compare", "--trees", str(root / "math-test"), "--policy", str(tmp_path / "leaky" / "policy.pt"),
                 "--rule", rule, "--out", str(tmp_path / "trained")) == 2
    err = capsys.readouterr().err.strip()
    assert "trained on it" in err and len(err.splitlines()) == 1 and not (tmp_path / "trained").exists()


def test_a_shipped_checkpoint_is_held_to_the_questions_it_trained_on(setup, tmp_path, capsys):
    """The shipped 1.5B trees policy carries its training run's split (``<name>.split.json`` beside it), so
    comparing it on questions it trained on is refused like a training run's checkpoint."""
    from deliberation.policy.shipped import checkpoint_path
    from deliberation.policy.split import split_file

    split = split_file(checkpoint_path("qwen2.5-coder-1.5b-trees"))
    assert split.name == "qwen2.5-coder-1.5b-trees.split.json" and "gsm8k/train/10" in json.loads(
        split.read_text())["train"]
    assert delib("tree", "--backend", "scripted", "--split", "train", "--offset", "10", "--limit", "2", "--out",
                 str(tmp_path / "seen"), "--quiet") == 0
    capsys.readouterr()
    assert delib("compare", "--trees", str(tmp_path / "seen"), "--policy", "qwen2.5-coder-1.5b-trees", "--rule",
                 str(setup["root"] / "tuning" / "best_rule.json"), "--out", str(tmp_path / "c")) == 2
    err = capsys.readouterr().err.strip()
    assert "gsm8k/train/10" in err and "qwen2.5-coder-1.5b-trees trained on it" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "c").exists()


def test_a_tuning_store_not_found_is_warned_about_not_silently_passed(setup, tmp_path, caplog):
    rule = json.loads((setup["root"] / "tuning" / "best_rule.json").read_text())
    moved = tmp_path / "best_rule.json"
    moved.write_text(json.dumps({**rule, "trees": ["elsewhere/gsm8k-train"]}))
    with caplog.at_level("WARNING", logger="deliberation"):
        assert delib("compare", "--trees", str(setup["root"] / "math-test"), "--policy", "default",
                     "--rule", str(moved), "--offline", "--out", str(tmp_path / "c")) == 0
    assert "cannot check" in caplog.text and "elsewhere/gsm8k-train" in caplog.text
    assert "cannot check that default did not train on the held-out questions (no split.json" in caplog.text
    assert (tmp_path / "c" / "team.json").is_file() and (tmp_path / "c" / "team.md").is_file()


def test_the_primary_arms_at_two_rounds_grow_the_stores_then_replay_offline(setup, tmp_path, capsys, caplog):
    """`--arms primary` (the paired experiment's two-round secondary): the learned policy and the best rule
    only; their round-2 nodes are generated with the store's backend and recorded, so the same comparison
    then replays offline to the same table."""
    for bench, n in (("gsm8k", "6"), ("math", "4")):  # fresh stores: round 1 only
        assert delib("tree", "--backend", "scripted", "--benchmark", bench, "--limit", n, "--samples", "6",
                     "--methods", "mpdf", "--out", str(tmp_path / f"{bench}-test")) == 0
    rule = tmp_path / "rule.json"  # a rule that refines while the team disagrees, so round 2 is deliberated
    tuned = json.loads((setup["root"] / "tuning" / "best_rule.json").read_text())
    rule.write_text(json.dumps({**tuned, "method": "always-refine", "label": "always-refine", "threshold": None}))
    trees = f"{tmp_path / 'gsm8k-test'},{tmp_path / 'math-test'}"
    common = ("compare", "--trees", trees, "--policy", "default", "--rule", str(rule), "--arms", "primary",
              "--rounds", "2")
    assert delib(*common, "--offline", "--out", str(tmp_path / "before")) == 2  # round 2 is not built yet
    assert "has no" in capsys.readouterr().err and not (tmp_path / "before" / "team.json").exists()
    nodes = len(TreeStore.open(tmp_path / "gsm8k-test").nodes)
    with caplog.at_level("WARNING", logger="deliberation"):
        assert delib(*common, "--out", str(tmp_path / "grown")) == 0
    assert f"note: {rule} was tuned at --rounds 1; it is compared here at --rounds 2" in caplog.text  # said, not hidden
    assert len(TreeStore.open(tmp_path / "gsm8k-test").nodes) > nodes
    assert delib(*common, "--offline", "--out", str(tmp_path / "replayed")) == 0
    grown, replayed = (json.loads((tmp_path / d / "team.json").read_text()) for d in ("grown", "replayed"))
    assert {r["label"] for r in grown["rows"]} == {"mpdf [default]", grown["reference"]} and grown["arms"] == "primary"
    assert grown["rows"] == replayed["rows"] and grown["paired"] == replayed["paired"]
    run = tmp_path / "grown" / "gsm8k-test" / "best-rule"
    assert json.loads((run / "config.json").read_text())["engine"]["rounds"] == 2
    turns = [t for line in (run / "episodes.jsonl").read_text().splitlines() for t in json.loads(line)["turns"]]
    assert any(t["round"] == 2 for t in turns)  # a second round was deliberated
