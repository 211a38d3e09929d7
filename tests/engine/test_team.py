"""Up-front team checks: a deliberating method needs peers; the estimated largest prompt must fit the window."""

import pytest

from deliberation.config import EngineConfig
from deliberation.engine.team_checks import CHARS_PER_TOKEN, TEMPLATE_TOKENS, check_context, check_team, prompt_estimate
from deliberation.errors import DelibError


def test_one_agent_is_refused_only_where_there_are_rounds():
    with pytest.raises(DelibError, match="--agents 1 leaves it no peers"):
        check_team("debate", EngineConfig(agents=1))
    check_team("self-consistency", EngineConfig(agents=1, rounds=0))
    check_team("debate", EngineConfig(agents=2))


def test_the_estimate_is_the_question_plus_every_answer_at_max_tokens():
    """Round 1's update prompt: the question, the agent's own answer and its peers' (each up to max_tokens)."""
    engine = EngineConfig(agents=3, max_tokens=100)
    assert prompt_estimate(4 * CHARS_PER_TOKEN, engine) == 4 + 3 * 100 + TEMPLATE_TOKENS
    assert prompt_estimate(4 * CHARS_PER_TOKEN + 1, engine) == 5 + 3 * 100 + TEMPLATE_TOKENS  # rounded up
    assert prompt_estimate(4 * CHARS_PER_TOKEN, EngineConfig(agents=3, rounds=0)) == 4 + TEMPLATE_TOKENS


def test_the_longest_question_decides_and_an_unknown_window_is_not_checked():
    engine = EngineConfig(agents=2, max_tokens=100)
    fits = TEMPLATE_TOKENS + 200 + 10  # a window one token above a 9-token question's estimate
    check_context("debate", engine, {"q1": "x" * 9 * CHARS_PER_TOKEN}, fits)
    with pytest.raises(DelibError, match=f"about {fits} tokens .* context window of {fits}; lower --agents"):
        check_context("debate", engine, {"q1": "short", "q2": "x" * 10 * CHARS_PER_TOKEN}, fits)
    check_context("debate", EngineConfig(agents=100), {"q1": "q"}, None)


def test_the_window_comes_from_the_backend_options_without_building_it():
    from deliberation.backends import context_window

    assert context_window("llamacpp", {"model": "missing.gguf"}) == 8192
    assert context_window("llamacpp", {"n_ctx": 2048}) == 2048
    assert context_window("openai", {"model": "m", "base_url": "u"}) is None
