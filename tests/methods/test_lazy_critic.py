"""``--lazy-critic``: the critic is called only where a confidence is read, by a later round's decisions or a
tied final vote. A team that agrees at round 0 stops there, and the last round's REFINEs feed only the vote:
skipping those calls keeps every answer, action and verdict and spends fewer tokens."""

from __future__ import annotations

import pytest

from deliberation.cli.main import main
from deliberation.engine.consensus import tied_at_top
from deliberation.runs.directory import RunDir
from deliberation.types import Episode


def run(tmp_path, name: str, method: str, *extra: str) -> dict[str, Episode]:
    out = tmp_path / name
    assert main(["run", "--method", method, "--benchmark", "gsm8k", "--backend", "scripted", "--limit", "30",
                 "--rounds", "1", "--out", str(out), "--quiet", *extra]) == 0
    return {e.example_id: e for e in RunDir(out).episodes()}


def what(episode: Episode) -> list[tuple]:
    """What an episode decided and answered, without what it spent."""
    return [(t.agent, t.round, t.action, t.answer, t.text, t.correct) for t in episode.turns]


def calls(episode: Episode, round_: int) -> list[int]:
    return [t.llm_calls for t in episode.turns if t.round == round_]


def tokens(episode: Episode) -> int:
    return sum(t.prompt_tokens + t.completion_tokens for t in episode.turns)


@pytest.mark.parametrize("method", ["mpdf", "agreement-then-confidence"])
def test_a_lazy_critic_skips_exactly_the_critic_calls_nothing_reads(tmp_path, method):
    eager, lazy = run(tmp_path, "eager", method), run(tmp_path, "lazy", method, "--lazy-critic")
    agreed = {q for q, e in eager.items() if not calls(e, 1)}
    tied = {q for q, e in eager.items() if tied_at_top([t.answer for t in e.turns if t.round == 1])}
    assert 0 < len(agreed) < len(eager) and len(eager) - len(agreed) - len(tied) > 0  # every case exercised
    for q, e in eager.items():
        assert (lazy[q].final_answer, lazy[q].correct, what(lazy[q])) == (e.final_answer, e.correct, what(e))
        if q in agreed:  # round 0 unanimous: the episode stops, its critic calls read by nothing
            assert calls(e, 0) == [2, 2, 2] and calls(lazy[q], 0) == [1, 1, 1]
        else:  # round 1's decisions read round 0's confidences
            assert calls(lazy[q], 0) == calls(e, 0) == [2, 2, 2]
            refined = [max(n - 1, 0) for n in calls(e, 1)]  # a REFINE: its call, then one critic call
            assert calls(lazy[q], 1) == (calls(e, 1) if q in tied else refined)
        assert tokens(lazy[q]) < tokens(e) or (q in tied or not any(calls(e, 1)))


@pytest.mark.parametrize("settings", [("--rounds", "2"), ("--rounds", "0"), ("--rounds", "2", "--no-early-stop")])
def test_a_lazy_critic_changes_no_answer_or_action_at_other_depths(tmp_path, settings):
    """Two rounds (a team that agrees after round 1 stops with its critic skipped), round 0 alone (only a tie
    reads it) and no early stop: the same episodes, fewer tokens; without the early stop exactly the critic
    calls after the last round's REFINEs and RESAMPLEs of an untied vote are skipped."""
    eager = run(tmp_path, "eager", "mpdf", *settings)
    lazy = run(tmp_path, "lazy", "mpdf", *settings, "--lazy-critic")
    assert {q: what(e) for q, e in lazy.items()} == {q: what(e) for q, e in eager.items()}
    assert [lazy[q].final_answer for q in eager] == [e.final_answer for e in eager.values()]
    if "--no-early-stop" not in settings:
        assert sum(map(tokens, lazy.values())) < sum(map(tokens, eager.values()))
        return
    last = [[t for t in e.turns if t.round == 2] for e in eager.values()]
    skipped = sum(t.action in ("refine", "resample") for turns in last if not tied_at_top([t.answer for t in turns])
                  for t in turns)
    assert sum(e.llm_calls for e in lazy.values()) == sum(e.llm_calls for e in eager.values()) - skipped


@pytest.mark.parametrize(("keys", "tied"), [(("1", "2", None), True), (("1", "2", "3"), True),
                                            (("1", "1", "2"), False), (("1", None, None), False),
                                            ((None, None, None), False), (("1", "1", "1"), False)])
def test_a_vote_is_tied_when_two_parseable_answers_share_the_most_votes(keys, tied):
    """The final vote reads confidences only then (its tie-break), so only then does a lazy critic call."""
    assert tied_at_top(keys) is tied


def test_critics_are_read_by_a_later_round_or_a_tied_final_vote_only():
    """``critics_read`` for a lazy method: after round 0 of 1 a split team is decided on (read), a unanimous
    one stops (not read); after the last round only a tie reads them; an eager method always reads them."""
    from deliberation import benchmarks
    from deliberation.actions import Action
    from deliberation.benchmarks.answers import make_backend
    from deliberation.config import EngineConfig
    from deliberation.engine.loop import AgentRecord, critics_read, make_context
    from deliberation.engine.spec import MethodSpec
    from deliberation.policy.rules import ConstantPolicy

    bench = benchmarks.get("gsm8k")
    example = bench.load("test", limit=1)[0]

    def read(keys: tuple, round_: int, lazy: bool = True) -> bool:
        spec = MethodSpec("probe", ConstantPolicy(Action.REFINE), confidence=True, lazy_critic=lazy)
        ctx = make_context(example, make_backend("scripted"), bench, EngineConfig(rounds=1), spec)
        return critics_read(ctx, [AgentRecord(f"answer {k}", k, None, 10, False) for k in keys], round_)

    assert read(("1", "2", "2"), 0) and not read(("1", "1", "1"), 0)
    assert read(("1", "2", None), 1) and not read(("1", "2", "2"), 1) and not read(("1", "1", "1"), 1)
    assert read(("1", "1", "1"), 0, lazy=False) and read(("1", "2", "2"), 1, lazy=False)
