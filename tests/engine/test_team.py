"""Up-front team checks: a deliberating method needs peers; the estimated largest prompt must fit the window."""

import pytest

from deliberation.config import EngineConfig
from deliberation.engine.team_checks import (CHARS_PER_TOKEN, TEMPLATE_TOKENS, check_context, check_team, peer_tokens,
                                             prompt_estimate)
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
    # a method that shows answers without deliberating (a graph agent, a workflow's ensemble) says how many tokens
    assert prompt_estimate(4 * CHARS_PER_TOKEN, EngineConfig(agents=3, rounds=0, max_tokens=100), 500) == \
        4 + 500 + TEMPLATE_TOKENS
    # a deliberating team's peers are clipped: its own answer whole, each peer's at most 500 tokens
    assert prompt_estimate(0, EngineConfig(agents=3, max_tokens=4096)) == 4096 + 2 * 500 + TEMPLATE_TOKENS


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


def test_a_method_that_shows_answers_without_deliberating_is_checked_by_what_it_shows():
    """AFlow's GSM8K ensemble shows its 5 solutions whole, its MATH one 4 (1 + 1 + 2); an AgentPrune agent its
    predecessors' over spatial and temporal edges (clipped: at most ``peer_tokens``), its decision agent every
    agent's, the Math Solver only their answers (not counted); fewer --max-tokens is the way out, not fewer
    --agents."""
    from deliberation.protocols.designs import initial
    from deliberation.protocols.workflow import TRANSFERRED

    assert (TRANSFERRED["gsm8k"].most_shown(), TRANSFERRED["math"].most_shown()) == (5, 4)
    every_edge = initial("agentprune", 3, 2)  # agent 2 reads 2 spatial and 3 temporal solutions
    assert every_edge.most_shown() == 5 and initial("agentprune", 3, 1).most_shown() == 3  # one round: the decision's
    assert peer_tokens(100) == 100 and peer_tokens(4096) == 500  # a peer's solution is shown by its last 2,000 chars
    engine = EngineConfig(agents=1, rounds=0, max_tokens=1000)
    check_context("aflow-gsm8k", engine, {"q1": "short"}, 1000)  # the question alone fits
    check_context("aflow-gsm8k", engine, {"q1": "short"}, 6000, 5000)  # and beside 5 answers of 1000 tokens
    with pytest.raises(DelibError, match=r"shows, about 5000 tokens\), .*; lower --max-tokens, or"):
        check_context("aflow-gsm8k", engine, {"q1": "short"}, 1000, 5000)
