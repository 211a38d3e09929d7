"""The episode reward derived from a scripted-backend tree store: decisions scored on the
team's final vote, later rounds run by the behaviour rule, their nodes grown once and then read offline."""

from __future__ import annotations

import json

import numpy as np
import pytest

from deliberation import benchmarks
from deliberation.cli.main import main
from deliberation.engine.consensus import Ballot, leave_one_out, vote
from deliberation.engine.loop import make_context, run_episode
from deliberation.backends.scripted import ScriptedBackend
from deliberation.benchmarks.answers import BenchmarkAnswers
from deliberation.engine.spec import MethodSpec
from deliberation.errors import DelibError
from deliberation.policy.rules import AgreementThreshold
from deliberation.rl.from_trees import decisions_from_trees
from deliberation.trees.store import TreeBackend, built_examples, open_store, store_engine
from deliberation.actions import ACTIONS
from deliberation.types import Decision, Episode, Turn


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("trees") / "store"
    assert main(["tree", "--backend", "scripted", "--limit", "12", "--quiet", "--out", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def grown(store):
    """Episode rewards over 2 rounds, the store grown with its own backend."""
    with pytest.raises(DelibError, match="--grow-trees"):
        decisions_from_trees(store, rounds=2, reward="episode")
    return decisions_from_trees(store, rounds=2, reward="episode", grow=True)


def test_grown_nodes_make_the_derivation_offline_and_repeatable(store, grown):
    assert decisions_from_trees(store, rounds=2, reward="episode") == grown


def test_episode_rewards_equal_round_rewards_where_no_round_follows(store, grown):
    """After the last round (or with one round) the final vote is the vote right after the round."""
    one = decisions_from_trees(store, rounds=1, reward="round")
    assert decisions_from_trees(store, rounds=1, reward="episode") == one
    by_round = decisions_from_trees(store, rounds=2, reward="round")
    assert [d.round for d in by_round] == [d.round for d in grown] and 2 in {d.round for d in grown}
    last = [(e.rewards, r.rewards) for e, r in zip(grown, by_round) if e.round == 2]
    assert last and all(a == b for a, b in last)
    assert any(e.rewards != r.rewards for e, r in zip(grown, by_round) if e.round == 1)


def greedy_episodes(store) -> dict[str, Episode]:
    """The behaviour rule without exploration, run online as an ordinary episode (critic on, as collected)."""
    tree = open_store(str(store))
    engine = store_engine(tree, 2)
    bench = benchmarks.get(tree.manifest.benchmark)
    examples = built_examples(tree, None)
    backend = TreeBackend(tree, ScriptedBackend(answers=BenchmarkAnswers))
    spec = MethodSpec("greedy-rule", AgreementThreshold(), confidence=True)
    return {ex.id: run_episode(make_context(ex, backend, bench, engine, spec), np.random.default_rng(0))
            for ex in examples}


def final_turns(episode: Episode) -> list[Turn]:
    last = {}
    for turn in episode.turns:
        last[turn.agent] = turn
    return [last[i] for i in sorted(last)]


def expected_rewards(episode: Episode, agent: int) -> float:
    """r_local + r_global of ``agent`` read off a whole episode: its own answers and the final ballots."""
    first = {t.agent: t for t in episode.turns if t.round == 0}
    final = final_turns(episode)
    ballots = [Ballot(t.answer, t.confidence) for t in final]
    right = lambda key: any(t.answer == key and t.correct for t in final) if key is not None else False  # noqa: E731
    r_local = float(final[agent].correct) - float(first[agent].correct)
    return r_local + float(right(vote(ballots))) - float(right(leave_one_out(ballots, agent)))


def test_the_taken_actions_episode_reward_is_the_rule_episodes_outcome(store, grown):
    """Where a sample's round-1 joint action is the rule's own, the episode that follows is the rule's
    episode: the reward of the taken action must be read off that episode, computed by the round loop."""
    episodes = greedy_episodes(store)
    checked = 0
    for (example, sample), team in _round_one_teams(grown).items():
        episode = episodes[example]
        rule = tuple(t.action for t in episode.turns if t.round == 1)
        if tuple(d.action for d in team) != rule:
            continue
        for d in team:
            assert d.rewards[ACTIONS.index(d.action)] == expected_rewards(episode, d.agent)
            checked += 1
    assert checked >= 9


def _round_one_teams(decisions: list[Decision]) -> dict[tuple[str, int], list[Decision]]:
    teams: dict[tuple[str, int], list[Decision]] = {}
    for d in decisions:
        if d.round == 1:
            teams.setdefault((d.example_id, d.sample), []).append(d)
    return teams


def test_delib_train_with_the_episode_reward(tmp_path, capsys):
    store = tmp_path / "store"
    assert main(["tree", "--backend", "scripted", "--limit", "10", "--quiet", "--out", str(store)]) == 0
    args = ["train", "--algo", "softrankpo-full", "--trees", str(store), "--allow-test",
            "--reward", "episode", "--epochs", "1"]
    assert main([*args, "--out", str(tmp_path / "offline")]) == 2
    err = capsys.readouterr().err.strip()
    assert "--grow-trees" in err and len(err.splitlines()) == 1 and not (tmp_path / "offline").exists()
    assert main([*args, "--grow-trees", "--out", str(tmp_path / "grown")]) == 0
    assert json.loads((tmp_path / "grown" / "config.json").read_text())["reward"] == "episode"
    assert main(["train", "--algo", "sft", "--trees", str(store), "--reward", "bogus",
                 "--out", str(tmp_path / "x")]) == 2
    assert "unknown reward 'bogus'" in capsys.readouterr().err


@pytest.mark.needs_split("gsm8k/train")
def test_rollouts_hold_only_the_round_reward(tmp_path, capsys):
    rollouts = tmp_path / "rollouts"
    assert main(["collect", "--limit", "2", "--joint-actions", "2", "--backend", "scripted", "--quiet",
                 "--out", str(rollouts)]) == 0
    assert main(["train", "--algo", "sft", "--rollouts", str(rollouts), "--reward", "episode",
                 "--out", str(tmp_path / "o")]) == 2
    assert "--trees" in capsys.readouterr().err and not (tmp_path / "o").exists()
