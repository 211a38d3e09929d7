"""Rollout collection on the scripted backend: counterfactual rewards, groups, files, resume."""

import dataclasses
import gzip
import json

import numpy as np
import pytest

from deliberation import benchmarks
from deliberation.backends.scripted import ScriptedBackend
from deliberation.benchmarks.answers import BenchmarkAnswers
from deliberation.config import EngineConfig
from deliberation.engine.loop import AgentRecord, make_context
from deliberation.engine.spec import MethodSpec
from deliberation.errors import DelibError
from deliberation.policy.epsilon import EpsilonMixed
from deliberation.policy.rules import AgreementThreshold
from deliberation.rl import rollout_files as files
from deliberation.rl.collect import CollectSpec, collect
from deliberation.rl.rollouts import Outcomes, collect_question, rewards_for
from deliberation.actions import ACTIONS, Action

BENCH = benchmarks.get("gsm8k")


def ctx_for(example, backend):
    spec = MethodSpec("collect", EpsilonMixed(AgreementThreshold(), 0.5), confidence=True)
    return make_context(example, backend, BENCH, EngineConfig(rounds=2), spec)


def rec(example, right, confidence=0.5):
    answer = example.answer if right else "-12345"
    return AgentRecord(f"so $\\boxed{{{answer}}}$", answer, confidence, 10, False)


@pytest.mark.needs_split("gsm8k/train")
def test_rewards_of_a_hand_built_decision():
    """Agent 0 is wrong; peers: one right (confidence 0.9), one wrong like agent 0 (0.2).
    PERSIST: the wrong pair wins the vote (0), without agent 0 the right peer wins the 1-1 tie on
    confidence (1): r_local 0, r_global 0 - 1 = -1. REFINE and CONCEDE make agent 0 right: the vote is
    right with and without it: r_local 1 - 0 = 1, r_global 1 - 1 = 0."""
    ex = BENCH.load("train", limit=1)[0]
    before = rec(ex, False)
    outcomes = Outcomes((rec(ex, False), rec(ex, True), rec(ex, True)), 100)
    others = [before, rec(ex, True, 0.9), rec(ex, False, 0.2)]  # agent 0's slot is replaced per action
    assert rewards_for(ctx_for(ex, None), before, outcomes, others, 0, 1) == [(0.0, -1.0), (1.0, 0.0), (1.0, 0.0)]


@pytest.mark.needs_split("gsm8k/train")
def test_collect_question_groups_and_counterfactuals():
    examples = BENCH.load("train", limit=6)
    backend = ScriptedBackend(benchmark="gsm8k", answers=BenchmarkAnswers)
    for ex in examples:
        decisions = collect_question(ctx_for(ex, backend), 4,
                                     np.random.default_rng(0))
        for d in decisions:
            assert len(d.rewards) == 3 and d.rewards[ACTIONS.index(d.action)] == pytest.approx(d.r_local + d.r_global)
            assert d.logprob <= 0 and len(d.own) == len(d.peers[0])
            assert (d.token_cost > 0) == (d.action is Action.REFINE)
        groups = {}
        for d in decisions:
            groups.setdefault((d.round, d.agent), set()).add(d.sample)
        assert all(s == {0, 1, 2, 3} for s in groups.values())


@pytest.mark.needs_split("gsm8k/train")
def test_collect_writes_resumable_gzip_jsonl(tmp_path):
    spec = CollectSpec(benchmark="gsm8k", split="train", limit=5, backend="scripted",
                       backend_options={"benchmark": "gsm8k"}, joint_actions=3, command="delib collect ...")
    assert collect(spec, str(tmp_path), progress=False) == 5
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["feature_version"] and manifest["command"] == "delib collect ..."
    rows = [json.loads(x) for x in gzip.open(tmp_path / files.ROLLOUTS, "rt")]
    assert [r["example_id"] for r in rows] == [e.id for e in BENCH.load("train", limit=5)]
    assert set(rows[0]) == {"model", "benchmark", "split", "example_id", "decisions"}
    size = (tmp_path / files.ROLLOUTS).stat().st_size
    with open(tmp_path / files.ROLLOUTS, "ab") as f:
        f.write(gzip.compress(b'{"torn": ')[:-7])  # a killed writer's partial member
    assert collect(spec, str(tmp_path), progress=False) == 5
    assert (tmp_path / files.ROLLOUTS).stat().st_size == size  # repaired, nothing redone
    assert len(files.load_decisions([tmp_path])) > 0



@pytest.mark.needs_split("gsm8k/train")
def test_a_resumed_collection_records_what_it_changed_once_it_adds_a_question(tmp_path):
    """The manifest kept its first --limit and command while the file grew past them; now a resume that adds
    questions records its settings as a run directory and a tree store do, and one that adds none records
    nothing."""
    spec = CollectSpec(benchmark="gsm8k", split="train", limit=2, backend="scripted", joint_actions=2,
                       command="delib collect --limit 2")
    manifest = tmp_path / "manifest.json"
    assert collect(spec, str(tmp_path), progress=False) == 2
    first = json.loads(manifest.read_text())
    assert collect(dataclasses.replace(spec, command="delib collect --limit 2 again"), str(tmp_path),
                   progress=False) == 2
    assert json.loads(manifest.read_text()) == first  # nothing added: nothing recorded
    assert collect(dataclasses.replace(spec, limit=3, command="delib collect --limit 3"), str(tmp_path),
                   progress=False) == 3
    record = json.loads(manifest.read_text())
    assert (record["limit"], record["command"]) == (2, "delib collect --limit 2")
    assert record["resumes"] == [{"command": "delib collect --limit 3", "limit": 3}]
    assert files.check_manifest(tmp_path).joint_actions == 2  # still reads as a rollout directory


@pytest.mark.needs_split("gsm8k/train")
def test_a_collection_that_holds_no_question_yet_takes_the_settings_of_a_rerun(tmp_path):
    """A collection that failed at its first question (a server down) left only its manifest; a rerun with the
    settings corrected was refused as holding 'rollouts with other settings'. Now it takes the folder over, as
    a run directory with no episode does; once it holds a question, other settings are refused again."""
    spec = CollectSpec(benchmark="gsm8k", split="train", limit=1, backend="scripted", joint_actions=2)
    assert collect(spec, str(tmp_path), progress=False) == 1
    (tmp_path / files.ROLLOUTS).unlink()  # what a collection that failed at its first question leaves
    assert collect(dataclasses.replace(spec, joint_actions=3), str(tmp_path), progress=False) == 1
    assert files.check_manifest(tmp_path).joint_actions == 3
    with pytest.raises(DelibError, match="holds rollouts with other settings"):
        collect(spec, str(tmp_path), progress=False)


@pytest.mark.needs_split("gsm8k/train")
def test_a_collection_asked_again_for_fewer_questions_says_it_holds_more(tmp_path, caplog):
    spec = CollectSpec(benchmark="gsm8k", split="train", limit=4, backend="scripted", joint_actions=2)
    assert collect(spec, str(tmp_path), progress=False) == 4
    assert "did not ask for" not in caplog.text
    assert collect(dataclasses.replace(spec, limit=3), str(tmp_path), progress=False) == 4
    assert f"{tmp_path} also holds 1 questions this command did not ask for" in caplog.text


@pytest.mark.needs_split("gsm8k/train")
def test_concurrent_collection_writes_the_same_questions(tmp_path):
    spec = CollectSpec(benchmark="gsm8k", split="train", limit=6, backend="scripted",
                       backend_options={"benchmark": "gsm8k"}, joint_actions=3)
    assert collect(spec, str(tmp_path / "1"), progress=False) == 6
    assert collect(dataclasses.replace(spec, concurrency=3), str(tmp_path / "3"), progress=False) == 6
    read = lambda d: {r["example_id"]: r for r in (json.loads(x) for x in gzip.open(d / files.ROLLOUTS, "rt"))}
    assert read(tmp_path / "1") == read(tmp_path / "3")
    # two collections of the same questions would be ranked as one group: refused
    with pytest.raises(DelibError, match=r"gsm8k/train/\d+ is in both"):
        files.load_decisions([tmp_path / "1", tmp_path / "3"])
    with pytest.raises(DelibError, match="more than once"):
        files.load_decisions([tmp_path / "1", tmp_path / "1" / files.ROLLOUTS])


@pytest.mark.needs_split("gsm8k/train")
def test_other_feature_version_and_empty_rollouts_are_refused(tmp_path):
    empty = tmp_path / "empty"
    spec = CollectSpec(benchmark="gsm8k", split="train", limit=1, backend="scripted", joint_actions=2)
    collect(spec, str(empty), progress=False)
    gzip.open(empty / files.ROLLOUTS, "wt").close()  # stopped before its first question finished
    with pytest.raises(DelibError, match="empty"):
        files.load_decisions([empty])
    other = tmp_path / "other"
    other.mkdir()
    manifest = json.loads((empty / files.MANIFEST).read_text())
    (other / files.MANIFEST).write_text(json.dumps({**manifest, "feature_version": -1}))
    with pytest.raises(DelibError, match="holds rollouts of feature version -1, this build uses version"):
        files.load_decisions([other])


@pytest.mark.parametrize("change, says", [
    ({"samples": "eight"}, "RolloutManifest.samples: a JSON text where a int belongs"),
    ({"model": None, "benchmark": None, "feature_names": 3}, "RolloutManifest.feature_names"),
])
@pytest.mark.needs_split("gsm8k/train")
def test_a_manifest_of_the_wrong_shape_is_one_line_naming_it_and_the_fix(tmp_path, change, says):
    """Training and a resumed collection read the manifest alike: a damaged one is refused, not a traceback."""
    spec = CollectSpec(benchmark="gsm8k", split="train", limit=1, backend="scripted", joint_actions=2)
    collect(spec, str(tmp_path), progress=False)
    path = tmp_path / files.MANIFEST
    manifest = json.loads(path.read_text())
    assert files.read_manifest(path).to_dict() == manifest
    path.write_text(json.dumps({**manifest, **change}))
    for read in (lambda: files.load_decisions([tmp_path]), lambda: collect(spec, str(tmp_path), progress=False)):
        with pytest.raises(DelibError) as refused:
            read()
        message = str(refused.value)
        assert message.startswith(f"{path} lacks or mangles an entry of a rollout manifest (") and says in message
        assert message.endswith("; restore it from a copy, or collect again into a new --out")
        assert "\n" not in message
    path.write_text("[1, 2]")
    with pytest.raises(DelibError, match="is not a rollout manifest"):
        files.load_decisions([tmp_path])


def test_joint_actions_below_two_and_no_exploration_are_refused():
    with pytest.raises(DelibError, match="--joint-actions must be at least 2"):
        CollectSpec(joint_actions=1)
    with pytest.raises(DelibError, match="nothing to rank"):
        CollectSpec(epsilon=0.0)


@pytest.mark.needs_split("gsm8k/train")
def test_collect_refuses_garbage_between_questions_instead_of_cutting_off_the_rest(tmp_path):
    """Only a torn last member (a killed writer's) is repaired; bytes that are not gzip in the middle of the file
    are refused, and the questions after them stay in the file."""
    from deliberation.files import gzip_members

    spec = CollectSpec(benchmark="gsm8k", split="train", limit=3, backend="scripted",
                       backend_options={"benchmark": "gsm8k"}, joint_actions=2)
    collect(spec, str(tmp_path), progress=False)
    path = tmp_path / files.ROLLOUTS
    first_end = next(gzip_members(path))[0]
    data = path.read_bytes()
    path.write_bytes(data[:first_end] + b"garbage" + data[first_end:])
    before = path.read_bytes()
    with pytest.raises(DelibError, match=f"is corrupt after byte {first_end} "):
        collect(spec, str(tmp_path), progress=False)
    assert path.read_bytes() == before


@pytest.mark.parametrize("row", [
    "a text",  # not an object: row["example_id"] raised TypeError
    {"decisions": []},  # no example id: KeyError
    {"example_id": "q", "decisions": [{"sample": 0}]},  # a decision without its fields: ValueError
    {"example_id": "q", "decisions": [None]},
])
@pytest.mark.needs_split("gsm8k/train")
def test_a_rollout_line_of_the_wrong_shape_is_refused_by_file_and_line(tmp_path, row):
    """Training reads it and a resumed collection reads it: both name the file and the line."""
    from deliberation.files import append_gzip_line

    spec = CollectSpec(benchmark="gsm8k", split="train", limit=2, backend="scripted",
                       backend_options={"benchmark": "gsm8k"}, joint_actions=2)
    collect(spec, str(tmp_path), progress=False)
    append_gzip_line(tmp_path / files.ROLLOUTS, row)
    message = rf"{files.ROLLOUTS} line 3 is not a record `delib collect` writes \("
    with pytest.raises(DelibError, match=message):
        files.load_decisions([tmp_path])
    with pytest.raises(DelibError, match=message):
        collect(dataclasses.replace(spec, limit=3), str(tmp_path), progress=False)
