"""The compute allocator end to end on the scripted backend: trained from a store, replayed offline by
``delib evaluate`` exactly as the offline paths simulate it, run online as replayed, and refused in one line
where it cannot run."""

from __future__ import annotations

import gzip
import json
import logging
import shutil
from pathlib import Path

import pytest
import torch

from deliberation.allocate.network import AllocatorNet, load_allocator, save_allocator
from deliberation.allocate.state import FEATURE_NAMES
from deliberation.cli.main import main
from deliberation.engine.spec import VoteWeights
from deliberation.allocate.episode import DELIBERATION
from deliberation.rl.allocation.fit import load_paths
from deliberation.rl.allocation.paths import question_paths, simulate
from deliberation.trees.store import open_store
from replays import episodes

QUESTIONS = 8
LIMIT = 12
TRAIN = pytest.mark.needs_split("gsm8k/train")  # the stores are of GSM8K train questions


def delib(*argv: str) -> int:
    return main([*argv, "--quiet"] if argv[0] in ("tree", "evaluate", "run") else list(argv))


def handmade(path: Path, step: int = 1, stop_from: int = 7) -> Path:
    """A three-move allocator with set weights that takes every move: DELIBERATE at the opening when the team
    disagrees, STOP when every answer agrees, else RESAMPLE (``step`` samples; 0: a team's) until
    ``stop_from`` are drawn."""
    net = AllocatorNet(len(FEATURE_NAMES), hidden=2, n_moves=3)
    with torch.no_grad():
        for layer in net.body:
            if isinstance(layer, torch.nn.Linear):
                layer.weight.zero_()
                layer.bias.zero_()
        first, second, last = net.body[0], net.body[2], net.body[4]
        first.weight[0, FEATURE_NAMES.index("drawn")] = 40.0
        first.bias[0] = -40.0 * (stop_from - 0.5) / 12  # h0 > 0 from stop_from draws on
        first.weight[1, FEATURE_NAMES.index("top_share")] = 40.0
        first.bias[1] = -40.0 * 0.99  # h1 < 0 unless every sample agrees
        second.weight.copy_(torch.eye(2) * 10.0)
        last.weight[0, 0], last.weight[0, 1], last.bias[0] = 6.0, 4.0, 3.0  # STOP from 7 draws on, or when all agree
        last.weight[2, 1] = -3.0  # DELIBERATE where the team disagrees
    return save_allocator(path, net, {"team": 3, "limit": LIMIT, "step": step, "vote": None})


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict[str, Path]:
    """A store of 12 samples a question; three-move allocators with set weights (one sample at a time, and a
    team's at a time stopping from 6 draws) and a two-move one trained on other questions (batches of the
    team, a weighted vote)."""
    root = tmp_path_factory.mktemp("allocate")
    for name, offset in (("store", "0"), ("fit", str(QUESTIONS))):
        assert delib("tree", "--backend", "scripted", "--split", "train", "--offset", offset, "--limit",
                     str(QUESTIONS), "--samples", str(LIMIT), "--methods", "mpdf", "--out", str(root / name)) == 0
    assert delib("train-allocator", "--trees", str(root / "fit"), "--lam", "0.0", "--step", "0",
                 "--vote-signal", "logprob-answer", "--vote-temperature", "0.5", "--sft-epochs", "40",
                 "--rl-epochs", "20", "--out", str(root / "two")) == 0
    return {"store": root / "store", "fit": root / "fit", "three": handmade(root / "three.pt"),
            "zero": handmade(root / "zero.pt", step=0, stop_from=6), "two": root / "two" / "allocator.pt"}


def replay(trained: dict[str, Path], policy: str, out: Path) -> list[dict]:
    assert delib("evaluate", "--trees", str(trained["store"]), "--method", "mpdf-allocate", "--policy",
                 str(trained[policy]), "--agents", str(LIMIT), "--offline", "--out", str(out)) == 0
    return episodes(out)


@TRAIN
@pytest.mark.parametrize("policy", ["three", "zero", "two"])
def test_the_offline_paths_simulate_what_the_replay_runs(trained, tmp_path, policy):
    allocator = load_allocator(str(trained[policy])).with_team(3)
    three = allocator.net.n_moves == 3
    vote = allocator.vote
    paths = question_paths(open_store(str(trained["store"])), LIMIT, VoteWeights(*vote) if vote else None,
                           DELIBERATION if three else None)
    simulated = {p.example_id: simulate(p, allocator, (lambda s: allocator.choose(s, True)) if three else None)
                 for p in paths}
    rows = replay(trained, policy, tmp_path / "replay")
    assert len(rows) == QUESTIONS
    for row in rows:
        sim = simulated[row["example_id"]]
        tokens = sum(t["prompt_tokens"] + t["completion_tokens"] for t in row["turns"])
        drawn = sum(t["round"] == 0 for t in row["turns"])
        assert (row["correct"], tokens, drawn, row["rounds_run"] == 1) == (sim.correct, sim.tokens, sim.drawn,
                                                                           sim.deliberated)
    if policy != "two":  # every move taken somewhere; a step of 0 draws a team's samples
        assert {s.deliberated for s in simulated.values()} == {True, False}
        assert {s.drawn for s in simulated.values()} == ({3, 7} if policy == "three" else {3, 6})


@TRAIN
def test_an_online_run_equals_the_replay(trained, tmp_path):
    out = tmp_path / "online"
    assert delib("run", "--method", "mpdf-allocate", "--policy", str(trained["three"]), "--backend", "scripted",
                 "--split", "train", "--limit", str(QUESTIONS), "--agents", str(LIMIT), "--out", str(out)) == 0
    assert episodes(out) == replay(trained, "three", tmp_path / "replay")
    config = json.loads((out / "config.json").read_text())
    assert config["policy_used"].startswith(str(trained["three"])) and "sha256:" in config["policy_used"]


@TRAIN
def test_the_training_record_holds_the_questions_and_self_consistency(trained):
    record = json.loads((trained["two"].parent / "training.json").read_text())
    assert len(record["questions"]) == QUESTIONS and record["limit"] == LIMIT and record["team"] == 3
    assert set(record["in_sample"]["self_consistency"]) == {str(k) for k in range(1, LIMIT + 1)}
    assert 3 <= record["in_sample"]["samples"] <= LIMIT and len(record["sha256"]) == 64


def bad(capsys, *argv: str) -> str:
    assert delib(*argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    return err


@TRAIN
def test_what_it_cannot_run_is_refused_in_one_line(trained, tmp_path, capsys):
    store = str(trained["store"])
    run = ("evaluate", "--trees", store, "--method", "mpdf-allocate", "--offline", "--out", str(tmp_path / "x"))
    assert "pass --agents above 3" in bad(capsys, *run, "--policy", str(trained["three"]))
    assert "is not a compute-allocation checkpoint but a deliberation policy checkpoint" in bad(
        capsys, *run, "--policy", "default", "--agents", "12")
    assert "is not a deliberation policy checkpoint but a compute-allocation checkpoint" in bad(
        capsys, "evaluate", "--trees", store, "--method", "mpdf", "--policy", str(trained["three"]), "--offline",
        "--out", str(tmp_path / "y"))
    assert "extend the store" in bad(capsys, "train-allocator", "--trees", store, "--samples", "13",
                                     "--out", str(tmp_path / "z"))
    assert "--moves must be 2" in bad(capsys, "train-allocator", "--trees", store, "--moves", "4",
                                      "--out", str(tmp_path / "z"))


@TRAIN
def test_training_never_overwrites_an_allocator_and_refuses_a_temperature_it_would_not_use(trained, tmp_path,
                                                                                         capsys):
    """An --out holding an allocator is refused before anything is read (runs may have used it); a
    --vote-temperature without --vote-signal would be ignored, and one out of range is named by its flag."""
    held = trained["two"]
    before = {p.name: p.read_bytes() for p in held.parent.iterdir()}
    train = ("train-allocator", "--trees", str(trained["fit"]), "--sft-epochs", "2", "--rl-epochs", "2")
    assert f"--out {held.parent} holds an allocator already (allocator.pt)" in bad(capsys, *train, "--out",
                                                                                   str(held.parent))
    assert {p.name: p.read_bytes() for p in held.parent.iterdir()} == before
    assert "pass --vote-signal too" in bad(capsys, *train, "--vote-temperature", "0.5", "--out", str(tmp_path / "a"))
    assert "--vote-temperature must be" in bad(capsys, *train, "--vote-signal", "logprob-answer",
                                               "--vote-temperature", "0", "--out", str(tmp_path / "b"))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@TRAIN
def test_a_run_resumed_with_another_checkpoint_at_the_same_path_says_the_policy_changed(trained, tmp_path, capsys):
    policy = tmp_path / "allocator.pt"
    shutil.copy(trained["three"], policy)
    replay = ("evaluate", "--trees", str(trained["store"]), "--method", "mpdf-allocate", "--policy", str(policy),
              "--agents", str(LIMIT), "--offline", "--out", str(tmp_path / "run"))
    assert delib(*replay) == 0
    shutil.copy(trained["zero"], policy)
    assert "other settings (policy_used (the policy: the --policy file, its content or the rule))" in bad(
        capsys, *replay)


@TRAIN
def test_an_allocator_refuses_the_questions_it_was_trained_on(trained, tmp_path, capsys):
    assert "was trained on 8 of these questions" in bad(
        capsys, "evaluate", "--trees", str(trained["fit"]), "--method", "mpdf-allocate", "--policy",
        str(trained["two"]), "--agents", str(LIMIT), "--offline", "--out", str(tmp_path / "in-sample"))
    assert not (tmp_path / "in-sample").exists()


def test_a_test_split_store_is_refused_for_training(tmp_path, capsys):
    assert delib("tree", "--backend", "scripted", "--limit", "2", "--samples", "4", "--methods", "mpdf",
                 "--out", str(tmp_path / "test-store")) == 0
    store = str(tmp_path / "test-store")
    assert "would be measured on the questions it learned from" in bad(
        capsys, "train-allocator", "--trees", store, "--samples", "4", "--out", str(tmp_path / "a"))
    assert "question gsm8k/test/0 is in " in bad(  # one store twice: every question would weigh twice
        capsys, "train-allocator", "--trees", f"{store},{store}", "--samples", "4", "--allow-test", "--out",
        str(tmp_path / "a"))
    assert not (tmp_path / "a").exists()
    assert delib("train-allocator", "--trees", store, "--samples", "4", "--allow-test",
                 "--sft-epochs", "5", "--rl-epochs", "5", "--out", str(tmp_path / "a")) == 0


@TRAIN
def test_early_stopping_sc_draws_windows_until_one_agrees(trained, tmp_path):
    for window in (2, 4):
        out = tmp_path / f"esc-{window}"
        assert delib("evaluate", "--trees", str(trained["store"]), "--method", "early-stopping-sc", "--agents",
                     str(LIMIT), "--esc-window", str(window), "--offline", "--out", str(out)) == 0
        for row in episodes(out):
            keys = [t["answer"] for t in row["turns"]]
            windows = [keys[i:i + window] for i in range(0, len(keys), window)]
            agreed = [w[0] is not None and len(set(w)) == 1 and len(w) == window for w in windows]
            assert not any(agreed[:-1]) and (agreed[-1] or len(keys) == LIMIT)


@TRAIN
def test_a_lower_adaptive_threshold_draws_no_more_samples(trained, tmp_path):
    drawn = {}
    for threshold in ("0.95", "0.6"):
        out = tmp_path / threshold
        assert delib("evaluate", "--trees", str(trained["store"]), "--method", "adaptive-consistency", "--agents",
                     str(LIMIT), "--adaptive-threshold", threshold, "--offline", "--out", str(out)) == 0
        drawn[threshold] = {row["example_id"]: len(row["turns"]) for row in episodes(out)}
    assert all(drawn["0.6"][k] <= drawn["0.95"][k] for k in drawn["0.95"])
    assert sum(drawn["0.6"].values()) < sum(drawn["0.95"].values())


@TRAIN
def test_runs_of_one_method_at_other_options_are_rows_of_their_own(trained, tmp_path):
    """An allocator at two operating points, ESC at two windows: a report never pools them."""
    from deliberation.report.loading import load_runs

    for name, argv in {"a": ("--method", "early-stopping-sc", "--esc-window", "2"),
                       "b": ("--method", "early-stopping-sc", "--esc-window", "3"),
                       "c": ("--method", "mpdf-allocate", "--policy", str(trained["three"]), "--stop-at", "0.9"),
                       "d": ("--method", "mpdf-allocate", "--policy", str(trained["three"]))}.items():
        assert delib("evaluate", "--trees", str(trained["store"]), *argv, "--agents", str(LIMIT), "--offline",
                     "--out", str(tmp_path / name)) == 0
    labels = sorted(r.label for r in load_runs([tmp_path]))
    assert labels == ["early-stopping-sc [esc_window=2]", "early-stopping-sc [esc_window=3]",
                      "mpdf-allocate [three, stop_at=0.9]", "mpdf-allocate [three, stop_at=default]"]


@TRAIN
def test_paths_beyond_the_samples_a_store_holds_name_the_extension(trained):
    from deliberation.trees.store import MissingNode

    with pytest.raises(MissingNode) as err:
        question_paths(open_store(str(trained["store"])), LIMIT + 1)
    assert "has no answer node of agent" in str(err.value) and str(err.value).endswith(
        f"extend the store with its own command, `--limit {QUESTIONS} --samples {LIMIT + 1}` (and those methods)")


@TRAIN
def test_samples_without_a_log_probability_summary_are_counted_and_warned_of(trained, tmp_path, caplog):
    """A store whose first samples were built before stores recorded summaries: the paths count them per
    question (their states read no log-probability), and training on it warns."""
    copy = tmp_path / "store"
    shutil.copytree(trained["store"], copy)
    rows = [json.loads(line) for line in gzip.open(copy / "trees.jsonl.gz", "rt")]
    for node in rows[0]["nodes"]:
        if node["kind"] == "answer" and node["agent"] < 3:
            node["completion"]["summary"] = None
    with gzip.open(copy / "trees.jsonl.gz", "wt") as out:
        out.writelines(json.dumps(row) + "\n" for row in rows)
    paths = question_paths(open_store(str(copy)), LIMIT)
    assert [p.unsummarised for p in paths] == [3] + [0] * (QUESTIONS - 1)
    with caplog.at_level(logging.WARNING, logger="deliberation"):
        load_paths([str(copy)], LIMIT, None, 2)
    assert f"1 of {QUESTIONS} questions (e.g. {paths[0].example_id}) hold samples without a log-probability" \
        in caplog.text
