"""Introspective confidence: a critic pass by the same model, read as P(Yes)
(docs/design.md, section Critic confidence).

With logprobs, P(Yes) is read from the first generated token's top alternatives: the probability mass of
tokens that spell "yes" against those that spell "no", renormalized over the two. Backends without
logprobs answer a verbalized 0-100 confidence instead. Unreadable answers give 0.5 (uninformative).
"""

from __future__ import annotations

import math
import re

from deliberation.types import Completion, GenerationRequest, Message, Purpose

CRITIC_SEED = 0  # critic calls are greedy; a fixed seed keeps their cache keys stable
TOP_LOGPROBS = 10
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def critic_request(messages: tuple[Message, ...], verbal: bool, agent: int | None = None,
                   purpose: Purpose | None = None) -> GenerationRequest:
    """One greedy critic call on the prompt set's critic ``messages``: a single token with logprobs, or a
    few tokens for a verbal score (asked for without logprobs). ``agent`` is the agent whose answer it judges:
    the critic is the same LLM, so in a mixed team the call goes to that agent's model. ``purpose``: what the
    call is for (every critic call the engine makes carries one)."""
    if verbal:
        return GenerationRequest(messages, max_tokens=8, temperature=0.0, seed=CRITIC_SEED, agent=agent,
                                 purpose=purpose)
    return GenerationRequest(messages, max_tokens=1, temperature=0.0, seed=CRITIC_SEED, logprobs=True,
                             top_logprobs=TOP_LOGPROBS, agent=agent, purpose=purpose)


def read_confidence(completion: Completion, verbal: bool) -> float:
    """P(correct) in [0, 1] from a critic completion."""
    if verbal or not completion.logprobs:
        return _verbal(completion.text) if verbal else _from_text(completion.text)
    first = completion.logprobs[0]
    alternatives = first.top or ((first.token, first.logprob),)
    yes = sum(math.exp(lp) for tok, lp in alternatives if _word(tok) == "yes")
    no = sum(math.exp(lp) for tok, lp in alternatives if _word(tok) == "no")
    return yes / (yes + no) if yes + no > 0 else _from_text(completion.text)


def _word(token: str) -> str:
    return token.strip().strip(".,!:").lower()


def _from_text(text: str) -> float:
    word = _word(text.split()[0]) if text.split() else ""
    return {"yes": 1.0, "no": 0.0}.get(word, 0.5)


def _verbal(text: str) -> float:
    match = _NUMBER.search(text)
    return min(max(float(match.group()) / 100.0, 0.0), 1.0) if match else 0.5
