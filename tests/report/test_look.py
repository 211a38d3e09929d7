"""A look of the paired experiment end to end on scripted stores (experiments/paired_look.sh): the registered
arms replayed over each store's block, paired with the best rule, the stopping rule applied, the look
merged into summary.json; and the refusal of a look whose block is not built."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

from deliberation.cli.main import main
from deliberation.errors import DelibError
from deliberation.report.paired import diff_points

from looks.markdown import headline_markdown, looks_markdown
from looks.record import look_record

pytestmark = [pytest.mark.needs_split("gsm8k/train"),  # its questions come from GSM8K train (no package ships it)
              pytest.mark.slow]  # whole looks: the experiment end to end (make test-slow)

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "paired_look.sh"


def tree(out: Path, benchmark: str, split: str, limit: int, offset: int = 0) -> None:
    assert main(["tree", "--backend", "scripted", "--benchmark", benchmark, "--split", split, "--limit", str(limit),
                 "--offset", str(offset), "--samples", "6", "--methods", "mpdf", "--out", str(out), "--quiet"]) == 0


GRID = [{"method": "always-resample", "threshold": None}, {"method": "agreement-resample", "threshold": None}]
"""The rule grid: the registered grid's RESAMPLE rules, so the best rule is one of them whichever the training
questions favour, and the look replays it again under its own name among the state-and-actions arms."""

BLOCK = ("4", "2")
"""A block of 4 GSM8K and 2 MATH questions: look 1 holds every built question."""


def register(root: Path, path: Path, block: str = ",".join(BLOCK), **roles: str) -> Path:
    """A registered.json of the look's files (experiments/registered.py write), ``roles`` overriding them."""
    files = {"policy": "default", "sft": str(root / "sft" / "policy.pt"),
             "rule": str(root / "tuning" / "best_rule.json"), "votes": str(root / "votes" / "vote_temperatures.json"),
             **roles}
    done = subprocess.run([sys.executable, str(SCRIPT.with_name("registered.py")), "write", str(path),
                           *(f"{role}={value}" for role, value in files.items()), f"block={block}"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("look")
    tree(root / "gsm8k-train", "gsm8k", "train", 6)
    tree(root / "gsm8k-test", "gsm8k", "test", 4)
    tree(root / "math-test", "math", "test", 2)
    (root / "rule_grid.json").write_text(json.dumps(GRID))
    assert main(["tune-rules", "--trees", str(root / "gsm8k-train"), "--grid", str(root / "rule_grid.json"),
                 "--rounds", "1", "--offline", "--quiet", "--out", str(root / "tuning")]) == 0  # as paired_prepare.sh
    assert main(["train", "--algo", "sft", "--trees", str(root / "gsm8k-train"), "--epochs", "1",
                 "--out", str(root / "sft")]) == 0
    assert main(["tune-votes", "--trees", str(root / "gsm8k-train"), "--rounds", "1", "--offline", "--quiet",
                 "--out", str(root / "votes")]) == 0
    set_apart(root / "votes" / "vote_temperatures.json")
    register(root, root / "registered.json")
    return root


def set_apart(votes: Path) -> None:
    """Every method of the tuned file votes at T = 3.0, never the default 0.1: what the tuning picks depends on the
    training questions, and a look that ignored the file must show in its configs whatever they are."""
    tuned = json.loads(votes.read_text())
    for chosen in tuned["methods"].values():
        chosen["vote_temperature"] = 3.0
    votes.write_text(json.dumps(tuned))


def look(root: Path, k: int, script: Path = SCRIPT, **extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "STORES": str(root), "OUT": str(root / "out"), "BLOCK": " ".join(BLOCK), "POLICY": "default",
           "SFT": str(root / "sft" / "policy.pt"), "RULE": str(root / "tuning" / "best_rule.json"),
           "VOTES": str(root / "votes" / "vote_temperatures.json"), "REGISTRATION": str(root / "registered.json"),
           "DELIB": str(Path(sys.executable).parent / "delib"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", **extra}
    return subprocess.run(["bash", str(script), str(k)], env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def looked(setup) -> Path:
    """Look 1 taken into setup/out."""
    done = look(setup, 1)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "look 1: z = " in done.stdout
    return setup


def test_a_look_is_recorded_with_its_decision_and_merged_into_the_summary(looked):
    summary = json.loads((looked / "out" / "summary.json").read_text())
    assert [x["look"] for x in summary["looks"]] == [1]
    record = summary["looks"][0]
    assert record == json.loads((looked / "out" / "look-1" / "summary.json").read_text())
    assert record["decision"]["boundary"] == 4.05 and record["reference"].startswith("best rule: ")
    pooled = record["methods"]["mpdf [default]"]["pooled"]
    assert pooled["n"] == 4 + 2 and {"only_method", "only_reference", "mcnemar_p", "diff_ci95", "token_ratio",
                                     "token_ratio_ci95"} <= set(pooled)
    assert "self-consistency [agents=6]" in record["methods"] and "adaptive-consistency" in record["methods"]
    equal = record["equal_tokens"]["mpdf [default]"]  # against self-consistency at its budget, k <= 6
    assert set(equal) == {"gsm8k/test", "math/test", "pooled"} and equal["pooled"]["n"] == 6
    assert 1 <= equal["gsm8k/test"]["k"][0] <= 6 and len(equal["pooled"]["k"]) == 2  # one k per benchmark
    assert len(equal["pooled"]["token_ratio_ci95"]) == 2  # every comparison's token ratio with its interval
    assert "mcnemar_p_holm" not in pooled  # the primary comparison: the sequential boundary tests it alone
    arms = record["methods"]
    adjusted = {label for label, cells in arms.items() if any("mcnemar_p_holm" in c for c in cells.values())}
    sft = next(label for label in arms if label.startswith("sft ["))
    itself = record["reference"].removeprefix("best rule: ")
    assert itself in {"always-resample", "agreement-resample"}  # here as in the registration: a RESAMPLE rule
    assert {"mpdf [default]", sft, "adaptive-consistency", "cisc", "cisc-logprob", "always-resample",
            "agreement-resample"} - {itself} <= adjusted  # the rule's grid has the RESAMPLE action (amendment 2)
    assert itself in arms and itself not in adjusted  # the rule replayed under its own name: no test of itself
    assert not adjusted & {"oracle", "self-consistency [agents=3]"}  # headroom rows, not registered tests
    assert "mcnemar_p_holm" in arms["mpdf [default]"]["gsm8k/test"]  # per benchmark: a secondary
    registered = [c for label in adjusted for c in arms[label].values() if "mcnemar_p_holm" in c]
    registered += [c for cells in record["learned_against"].values() for c in cells.values()]
    assert all(c["mcnemar_p_holm"] >= c["mcnemar_p"] for c in registered)
    against = record["learned_against"]
    assert set(against) == {"self-consistency [agents=3]", "self-consistency [agents=6]"}
    assert against["self-consistency [agents=3]"]["pooled"]["n"] == 6 and "diff_ci95" in against[
        "self-consistency [agents=6]"]["gsm8k/test"]
    headline = (looked / "out" / "look-1" / "headline.md").read_text()
    assert headline.index("**pooled**") < headline.index("**gsm8k/test**") < headline.index("**math/test**")
    assert "\n| mpdf [default] | 6 | " in headline and "| best rule: " in headline
    assert f"\n| {itself} | " not in headline  # the reference's own method again: not a row of its own
    assert f"decision: {record['decision']['reason']}" in headline
    ends = [100 * arms[arm]["pooled"]["diff_ci95"][1] for arm in ("oracle", "mpdf [default]")]
    assert f"oracle {ends[0]:+.2f} and learned {ends[1]:+.2f} points (it stops below +2)" in headline
    apart = copy.deepcopy(record)  # the fixture's two ends are equal: set them apart, one just below +2
    apart["methods"]["oracle"]["pooled"]["diff_ci95"][1] = 0.031
    apart["methods"]["mpdf [default]"]["pooled"]["diff_ci95"][1] = 0.0196
    assert "oracle +3.10 and learned +1.96 points (it stops below +2)" in headline_markdown(apart)
    looks = (looked / "out" / "looks.md").read_text()  # every look taken, one row each, from the records
    d, primary = record["decision"], diff_points(pooled["diff"], pooled["diff_ci95"])
    assert looks.startswith("| look | commit | n (gsm8k/test + math/test) | ") and looks.count("\n| 1 | ") == 1
    row = next(line for line in looks.splitlines() if line.startswith("| 1 | "))
    assert row.endswith(f" | 4 + 2 | {primary} | {d['z']:+.2f} (4.05) | {ends[0]:+.2f} / {ends[1]:+.2f} | "
                        f"{d['reason']} |")
    assert row.startswith(f"| 1 | {(record['provenance']['commit'] or '-')[:7]}")  # the commit it was taken under
    second = {**apart, "look": 2, "decision": {**d, "look": 2, "boundary": 2.86, "reason": "futility: learned"}}
    third = copy.deepcopy({**second, "look": 3})
    del third["methods"]["mpdf [default]"]["math/test"]  # a look without a benchmark's questions: "-"
    table = looks_markdown([third, second, record])  # in look order, whatever the order given
    assert table.index("\n| 1 | ") < table.index("\n| 2 | ") < table.index("\n| 3 | ")
    assert " | 4 + 2 | " in table.split("\n| 2 | ")[1].split("\n")[0] and "| 4 + - |" in table.split("\n| 3 | ")[1]
    assert "(2.86) | +3.10 / +1.96 | futility: learned |" in table
    assert "mpdf [default] against self-consistency [agents=6] (pooled, n = 6): " in headline
    equal_p = record["equal_tokens"]["mpdf [default]"]["pooled"]
    assert f", p {equal_p['mcnemar_p']:.3g} (Holm {equal_p['mcnemar_p_holm']:.3g}) |" in headline
    room = record["headroom"]
    assert set(room) == {"gsm8k/test", "math/test", "pooled"} and room["pooled"]["some_agent_right"]["n"] == 6
    assert room["pooled"]["auroc"]["critic"]["n"] == 6 * 6  # 6 questions x (3 round-0 answers + 3 REFINEs)
    made = record["provenance"]
    assert made["registered"] == json.loads((looked / "registered.json").read_text())
    assert made["numpy"] == numpy.__version__
    assert made["stores"] == [f"{looked / 'gsm8k-test'}:4", f"{looked / 'math-test'}:2"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=SCRIPT.parent, capture_output=True, text=True)
    assert made["commit"] == (None if head.returncode else made["commit"]) and (  # None outside a git checkout
        head.returncode or made["commit"].removesuffix("+dirty") == head.stdout.strip())


def test_a_retaken_look_replays_every_arm_afresh(looked):
    """The latest look may be retaken (amendment 6): its replays are run from the stores, not resumed from
    the runs already in it (which a code change would leave stale), and the same code records the same look;
    the two-round secondary's folder beside them stays."""
    folder = looked / "out" / "look-1"
    before = json.loads((folder / "summary.json").read_text())
    stale = folder / "compare" / "stale.txt"
    stale.write_text("left by an earlier take\n")
    secondary = folder / "rounds-2" / "team.json"  # the two-round secondary's, another job's: kept
    secondary.parent.mkdir()
    secondary.write_text("{}\n")
    done = look(looked, 1)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not stale.exists() and secondary.read_text() == "{}\n"
    after = json.loads((folder / "summary.json").read_text())
    assert {**after, "provenance": None} == {**before, "provenance": None}
    assert (looked / "out" / "looks.md").read_text().count("\n| 1 | ") == 1  # the retake's row replaces the first


def test_the_headroom_table_has_the_registered_rows_in_order(looked):
    """Amendment 1's headroom table: round-0 vote, some agent right, oracle, best rule, constants, learned, SFT,
    self-consistency k = 1..6, per benchmark and pooled; then the AUROCs."""
    record = json.loads((looked / "out" / "look-1" / "summary.json").read_text())
    table = (looked / "out" / "look-1" / "headroom.md").read_text()
    pooled = table[table.index("**pooled**"):table.index("AUROC for answer correctness, pooled")]
    rows = [line.split(" | ")[0].removeprefix("| ") for line in pooled.splitlines() if line.startswith("| ")][2:]
    sft = next(label for label in record["methods"] if label.startswith("sft ["))
    constants = [c for c in ("always-persist", "always-refine", "always-concede", "always-resample")
                 if c != record["reference"].removeprefix("best rule: ")]  # the best rule is its own row
    assert rows == ["round-0 vote (self-consistency, k = 3)", "some agent right at round 0",
                    "oracle (persist, concede, refine; in hindsight)",
                    record["reference"], *constants, "mpdf [default]", sft,
                    *(f"self-consistency [agents={k}]" for k in range(1, 7))]
    right = record["headroom"]["pooled"]["some_agent_right"]
    assert f"| some agent right at round 0 | 6 | {100 * right['share']:.1f} | | |" in pooled
    assert "AUROC for answer correctness, pooled" in table and "| critic | 36 |" in table


def test_the_record_keeps_the_meta_actions_each_arm_took_per_benchmark_and_pooled(looked):
    """The registration reports the learned policy's action distribution; the record counts, per benchmark
    and pooled, what each arm's episodes took at rounds 1..R, and headroom.md shows them as shares."""
    folder = looked / "out" / "look-1"
    record = json.loads((folder / "summary.json").read_text())
    actions = record["actions"]
    learned = actions["mpdf [default]"]
    for store, column in (("gsm8k-test", "gsm8k/test"), ("math-test", "math/test")):
        episodes = [json.loads(line) for line in (folder / "compare" / store / "policy-1" / "episodes.jsonl").open()]
        taken = [t["action"] for e in episodes for t in e["turns"] if t["round"] >= 1]
        assert learned[column] == {"decisions": len(taken), **{a: taken.count(a) for a in
                                                               ("persist", "refine", "concede", "resample")}}
    assert learned["pooled"]["decisions"] == learned["gsm8k/test"]["decisions"] + learned["math/test"]["decisions"]
    assert set(actions["always-refine"]["pooled"]) == {"decisions", "persist", "refine", "concede", "resample"}
    assert actions["always-refine"]["pooled"]["refine"] == actions["always-refine"]["pooled"]["decisions"] > 0
    assert not any(label.startswith("self-consistency") for label in actions)  # took no meta-action
    table = (folder / "headroom.md").read_text()
    first = table[table.index("Meta-actions at rounds 1..R"):].splitlines()[4]
    assert first.startswith("| mpdf [default] | pooled | ")  # the learned policy first, pooled first


def test_the_cisc_arms_vote_at_the_temperatures_tuned_on_training_trees(looked):
    tuned = json.loads((looked / "votes" / "vote_temperatures.json").read_text())["methods"]
    assert set(tuned) == {"cisc", "cisc-logprob"}
    for store in ("gsm8k-test", "math-test"):
        for method, chosen in tuned.items():
            config = json.loads((looked / "out" / "look-1" / "sampling" / store / "adaptive" / method /
                                 "config.json").read_text())
            assert config["vote_temperature"] == chosen["vote_temperature"] != 0.1  # set apart from the default


def test_a_look_without_tuned_vote_temperatures_is_refused(setup, tmp_path):
    env = {**os.environ, "STORES": str(setup), "OUT": str(tmp_path / "out"), "BLOCK": "2 1", "POLICY": "default",
           "SFT": str(setup / "sft" / "policy.pt"), "RULE": str(setup / "tuning" / "best_rule.json")}
    done = subprocess.run(["bash", str(SCRIPT), "1"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "vote_temperatures.json not found" in done.stderr
    assert not (tmp_path / "out").exists()


def edited(path: Path, folder: Path) -> str:
    """A copy of the JSON file at ``path`` with one more key: the same content to a reader, another file."""
    copy = folder / path.name
    copy.write_text(json.dumps({**json.loads(path.read_text()), "edited": True}))
    return str(copy)


@pytest.mark.parametrize("role, given", [
    ("policy", {"POLICY": "grpo"}),  # a policy retrained after the registration
    ("policy", {"POLICY": "SFT", "SFT": "default"}),  # the two checkpoints in each other's roles
    ("rule", {"RULE": "edited"}), ("votes", {"VOTES": "edited"}), ("block", {"BLOCK": "2 1"})])
def test_a_look_runs_only_the_registered_files_in_their_roles(setup, tmp_path, role, given):
    """One line names the role that differs; nothing is replayed or written."""
    files = {"POLICY": "default", "SFT": str(setup / "sft" / "policy.pt"),
             "RULE": str(setup / "tuning" / "best_rule.json"), "VOTES": str(setup / "votes" / "vote_temperatures.json")}
    extra = {key: files["SFT"] if value == "SFT" else edited(Path(files[key]), tmp_path) if value == "edited" else value
             for key, value in given.items()}
    done = look(setup, 1, OUT=str(tmp_path / "out"), **extra)
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(err) == 1 and f"is not the registered {role} (" in err[0]
    assert "a look runs only what an amendment committed before it" in err[0]
    assert not (tmp_path / "out").exists()


def test_looks_are_taken_in_order(looked, tmp_path):
    """Look 2 needs look 1 recorded (nothing is written without it); after a look 1 that continued, look 2
    passes that check and is held back by its unbuilt block. tests/report/test_sequential.py has the rest."""
    done = look(looked, 2, OUT=str(tmp_path / "out"))
    assert done.returncode == 2 and "look 2 comes after look 1, which is not recorded" in done.stderr
    assert not (tmp_path / "out").exists()
    summary = json.loads((looked / "out" / "summary.json").read_text())
    summary["looks"][0]["decision"]["stop"] = False  # whether the scripted look 1 stops depends on the questions
    continued = tmp_path / "continued"
    continued.mkdir()
    (continued / "summary.json").write_text(json.dumps(summary))
    again = look(looked, 2, OUT=str(continued))
    assert again.returncode == 2 and "has not built its first 8 questions yet" in again.stderr


def test_a_look_at_an_unbuilt_block_is_refused(setup, tmp_path):
    reg = register(setup, tmp_path / "registered.json", block="6,2")
    done = look(setup, 1, BLOCK="6 2", REGISTRATION=str(reg), OUT=str(tmp_path / "out"))
    assert done.returncode == 2 and "has not built its first 6 questions yet" in done.stderr


def test_a_look_whose_replays_miss_questions_of_its_block_is_refused(looked):
    """paired_look.py holds the look to its whole block: here the block claims one more MATH question than
    the look replayed (its record would be decided on fewer questions)."""
    script = SCRIPT.with_name("paired_look.py")
    short = subprocess.run([sys.executable, str(script), "record", "1", str(looked / "out" / "look-1"),
                            str(looked / "other-summary.json"), str(looked / "registered.json"),
                            f"{looked / 'gsm8k-test'}:4", f"{looked / 'math-test'}:3"],
                           capture_output=True, text=True, timeout=120)
    assert short.returncode == 2 and short.stderr.strip() == (
        "look 1: the learned arm answered 6 questions, its block has 7; rerun the look's replays")
    assert not (looked / "other-summary.json").exists()


def test_an_earlier_look_whose_record_is_malformed_is_one_clear_error_and_nothing_is_written(looked, tmp_path):
    """looks.md is rendered from every recorded look before anything is written: a summary.json whose look 1
    lacks its cells stops look 2 with one line, and no file of look 2, looks.md or summary.json changes."""
    folder = tmp_path / "look-2"
    shutil.copytree(looked / "out" / "look-1", folder)
    for name in ("summary.json", "headline.md", "headroom.md"):
        (folder / name).unlink()
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"looks": [{"look": 1, "decision": {"stop": False}}]}) + "\n")
    before = summary.read_text()
    done = subprocess.run([sys.executable, str(SCRIPT.with_name("paired_look.py")), "record", "2", str(folder),
                           str(summary), str(looked / "registered.json")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip() == (
        f"{summary}: a look's record lacks 'methods' (its learned arm's cells, the oracle's or its decision); "
        "restore summary.json from git")
    assert summary.read_text() == before and not (tmp_path / "looks.md").exists()
    assert not any((folder / name).exists() for name in ("summary.json", "headline.md", "headroom.md"))


def test_the_two_round_secondary_runs_after_the_look_that_stopped_the_design(setup, tmp_path):
    """experiments/paired_two_rounds.sh: refused while no look has stopped the design; after look 1 stopped it
    (one GSM8K and one MATH question on which the scripted agents agree at round 0: every arm answers as the
    rule, so no policy can gain, futility), the learned policy and the best rule at two rounds over the look's
    questions, with the provenance a look records; a checkpoint other than the registered one, or stores other
    than the look's, are refused, and no look 2 is taken."""
    tree(tmp_path / "gsm8k-test", "gsm8k", "test", 1)
    tree(tmp_path / "math-test", "math", "test", 1, offset=2)
    env = {"STORES": str(tmp_path), "OUT": str(tmp_path / "out"), "BLOCK": "1 1",
           "REGISTRATION": str(register(setup, tmp_path / "registered.json", block="1,1"))}
    script = SCRIPT.with_name("paired_two_rounds.sh")
    early = look(setup, 1, script, **env)
    assert early.returncode == 2 and "look 1 is not recorded" in early.stderr
    assert look(setup, 1, **env).returncode == 0
    decision = json.loads((tmp_path / "out" / "summary.json").read_text())["looks"][0]["decision"]
    assert decision["stop"] and decision["reason"].startswith("futility"), decision
    after = look(setup, 2, **env)
    assert after.returncode == 2 and f"look 1 stopped the design ({decision['reason']}); no look 2" in after.stderr
    refused = look(setup, 1, script, **env, POLICY="grpo")
    assert refused.returncode == 2 and "is not the registered policy" in refused.stderr
    elsewhere = look(setup, 1, script, **{**env, "STORES": str(setup)})  # stores other than the look's
    assert elsewhere.returncode == 2 and "look 1 was taken on [" in elsewhere.stderr
    assert not (tmp_path / "out" / "look-1" / "rounds-2").exists()
    done = look(setup, 1, script, **env)
    assert done.returncode == 0, done.stderr[-2000:]
    made = json.loads((tmp_path / "out" / "look-1" / "rounds-2" / "provenance.json").read_text())
    assert made["stores"] == [f"{tmp_path / 'gsm8k-test'}:1", f"{tmp_path / 'math-test'}:1"]
    assert made["numpy"] == numpy.__version__ and made["registered"] == json.loads(
        (tmp_path / "registered.json").read_text()) and "commit" in made
    team = json.loads((tmp_path / "out" / "look-1" / "rounds-2" / "team.json").read_text())
    assert {r["label"] for r in team["rows"]} == {"mpdf [default]", team["reference"]}
    assert {r["n"] for r in team["rows"] if r["column"] == "pooled"} == {2}
    config = json.loads((tmp_path / "out" / "look-1" / "rounds-2" / "math-test" / "best-rule" / "config.json")
                        .read_text())
    assert config["engine"]["rounds"] == 2 and config["limit"] == 1


def test_a_look_missing_a_registered_comparison_with_self_consistency_is_refused(looked, tmp_path):
    """The Holm family may not shrink silently: a reference report that does not pair the learned policy on
    every benchmark, or a report without the equal-token rows, is refused with what is missing."""
    look_dir = looked / "out" / "look-1"
    record = json.loads((look_dir / "summary.json").read_text())
    against = sorted((look_dir / "against").glob("*"))
    assert look_record(1, look_dir / "report", record["learned"], against=against)["methods"] == record["methods"]
    partial = tmp_path / "partial"
    partial.mkdir()
    rows = json.loads((against[0] / "paired.json").read_text())
    (partial / "paired.json").write_text(json.dumps(
        [r for r in rows if not (r["label"] == record["learned"] and r["column"] == "math/test")]))
    with pytest.raises(DelibError, match=r"against self-consistency \[agents=3\]: \['math/test'\]"):
        look_record(1, look_dir / "report", record["learned"], against=[partial, against[1]])
    report = tmp_path / "report"
    shutil.copytree(look_dir / "report", report)
    rows = json.loads((report / "paired.json").read_text())
    (report / "paired.json").write_text(json.dumps([r for r in rows if r.get("budget") is None]))
    with pytest.raises(DelibError, match=r"at equal tokens: \['gsm8k/test', 'math/test', 'pooled'\]"):
        look_record(1, report, record["learned"], against=against)


@pytest.mark.parametrize("change", ["fewer", "unpaired"])
def test_a_look_in_which_an_arm_misses_questions_is_refused(looked, tmp_path, change):
    """Every arm answers the block's questions: an arm paired with the best rule on fewer of them (both failed on
    one), or on questions the best rule did not run, is refused, not tested on a smaller set."""
    look_dir = looked / "out" / "look-1"
    record = json.loads((look_dir / "summary.json").read_text())
    report = tmp_path / "report"
    shutil.copytree(look_dir / "report", report)
    rows = json.loads((report / "paired.json").read_text())
    sft = next(r for r in rows if r["label"].startswith("sft [") and r["column"] == "math/test")
    sft["n" if change == "fewer" else "unpaired"] += -1 if change == "fewer" else 1
    (report / "paired.json").write_text(json.dumps(rows))
    against = sorted((look_dir / "against").glob("*"))
    with pytest.raises(DelibError, match=r"look 1: sft \[.*\] against best rule: .* on math/test covers [12] of its "
                                         r"2 questions \([01] unpaired\) \(1 such rows\)"):
        look_record(1, report, record["learned"], against=against)
