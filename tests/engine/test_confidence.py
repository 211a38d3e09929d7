"""Reading the critic's P(Yes) from logprobs, and the verbal fallback."""

import math

import pytest

from deliberation.engine import prompts
from deliberation.engine.confidence import critic_request, read_confidence
from deliberation.types import Completion, TokenLogprob


def completion(text, top=None):
    lp = None if top is None else (TokenLogprob(text, top[0][1], tuple(top)),)
    return Completion(text, 10, 1, lp)


def test_p_yes_renormalized_over_yes_and_no():
    top = [("Yes", math.log(0.6)), (" No", math.log(0.2)), ("Maybe", math.log(0.2))]
    assert read_confidence(completion("Yes", top), verbal=False) == pytest.approx(0.75)


def test_yes_variants_are_summed():
    top = [("Yes", math.log(0.3)), (" yes", math.log(0.3)), ("No", math.log(0.4))]
    assert read_confidence(completion("No", top), verbal=False) == pytest.approx(0.6)


@pytest.mark.parametrize("text, expected", [("85", 0.85), ("I'd say 40%", 0.4), ("250", 1.0), ("none", 0.5)])
def test_verbal(text, expected):
    assert read_confidence(completion(text), verbal=True) == pytest.approx(expected)


def test_no_logprobs_falls_back_to_text():
    assert read_confidence(completion("Yes"), verbal=False) == 1.0
    assert read_confidence(completion("Hmm"), verbal=False) == 0.5


def test_critic_request_is_one_greedy_token_with_logprobs():
    req = critic_request(prompts.get("continuation").critic("Q?", prompts.answered("Q?", "A."), False).messages,
                         verbal=False)
    assert req.max_tokens == 1 and req.temperature == 0 and req.logprobs and req.top_logprobs > 1
