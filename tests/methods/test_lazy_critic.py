"""``--lazy-critic``: a team that agrees at round 0 stops there, so its critic calls decide nothing; skipping
them keeps every answer, action and verdict and spends fewer tokens (``MethodOptions.lazy_critic``)."""

from __future__ import annotations

import pytest

from deliberation.cli.main import main
from deliberation.errors import DelibError
from deliberation.runs.directory import RunDir
from deliberation.runs.runner import RunSpec, method_entry
from deliberation.types import Episode


def run(tmp_path, name: str, method: str, *extra: str) -> dict[str, Episode]:
    out = tmp_path / name
    assert main(["run", "--method", method, "--benchmark", "gsm8k", "--backend", "scripted", "--limit", "30",
                 "--out", str(out), "--quiet", *extra]) == 0
    return {e.example_id: e for e in RunDir(out).episodes()}


def what(episode: Episode) -> list[tuple]:
    """What an episode decided and answered, without what it spent."""
    return [(t.agent, t.round, t.action, t.answer, t.text, t.correct) for t in episode.turns]


def spent(episode: Episode) -> list[tuple]:
    return [(t.llm_calls, t.prompt_tokens, t.completion_tokens, t.confidence) for t in episode.turns]


@pytest.mark.parametrize("method", ["mpdf", "agreement-then-confidence"])
def test_a_lazy_critic_skips_only_the_critic_calls_of_a_team_that_agrees_at_round_0(tmp_path, method):
    eager, lazy = run(tmp_path, "eager", method), run(tmp_path, "lazy", method, "--lazy-critic")
    agreed = {q for q, e in eager.items() if not any(t.round >= 1 for t in e.turns)}
    assert 0 < len(agreed) < len(eager)  # both kinds of question are exercised
    for q, e in eager.items():
        assert (lazy[q].final_answer, lazy[q].correct, what(lazy[q])) == (e.final_answer, e.correct, what(e))
        if q not in agreed:  # a decision reads the confidences: every call is made, as before
            assert spent(lazy[q]) == spent(e)
            continue
        assert [t.llm_calls for t in e.turns] == [2, 2, 2] and [t.llm_calls for t in lazy[q].turns] == [1, 1, 1]
        assert all(t.confidence is None for t in lazy[q].turns)
        assert sum(t.prompt_tokens + t.completion_tokens for t in lazy[q].turns) < sum(
            t.prompt_tokens + t.completion_tokens for t in e.turns)


def test_a_method_without_the_critic_refuses_it():
    with pytest.raises(DelibError, match="--lazy-critic means nothing to method always-persist"):
        method_entry(RunSpec(method="always-persist", lazy_critic=True))
