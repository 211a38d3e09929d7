"""An OpenAI-compatible server's chat completion as a ``Completion`` (pure; ``openai_http`` sends the requests).

What a server may get wrong, and what each gets:

- No usable content (no choices, content null, empty, whitespace only, not text, or text that is not valid
  Unicode: ``errors.clean_text``): ``MalformedResponse``, which the backend retries and never returns, so
  nothing empty or broken is cached. Content null or blank because ``max_tokens`` ran out first
  (finish_reason length) is a DelibError at once: retrying repeats it.
- Log-probabilities of the wrong shape (not a list of tokens, a log-probability that is not a finite number,
  a token that is not text): ``MalformedResponse`` when the request asked for them (the answer is not what was
  asked); ignored with a warning when it did not (they were never wanted).
- Token counts (``usage``) that are not counts, and a finish_reason that is not text: ignored with a warning,
  the counts estimated as below and the reason read as "stop".

Token counts come from the response's ``usage``. Some servers omit it; then the completion is counted as
the number of returned logprob entries when there are any, else estimated at ~4 characters per token
(OpenAI's rule of thumb for English text), and the prompt likewise from its characters. The estimate is
only a fallback for reporting; it is never used for anything that needs exact counts.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from deliberation.backends.logprob_summary import from_pieces, from_texts
from deliberation.errors import BadText, DelibError, clean_text
from deliberation.types import Completion, GenerationRequest, LogprobSummary, TokenLogprob

CHARS_PER_TOKEN = 4  # fallback estimate when the server sends no usage
log = logging.getLogger(__name__)


class MalformedResponse(Exception):
    """The server answered 2xx with something that is not a usable chat completion."""


def completion_from_response(response: Any, request: GenerationRequest, latency_s: float,
                             logprobs_asked: bool = False) -> Completion:
    """Map an ``openai`` ChatCompletion to a Completion (module docstring: what each fault gets);
    ``logprobs_asked``: whether the request sent asked for log-probabilities."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise MalformedResponse(f"response has no choices: {str(response)[:120]!r}")
    choice = choices[0]
    reason = _finish_reason(getattr(choice, "finish_reason", None))
    text = _content(getattr(getattr(choice, "message", None), "content", None), reason)
    tokens, summary = _token_logprobs(getattr(getattr(choice, "logprobs", None), "content", None), text,
                                      logprobs_asked)
    prompt_tokens, completion_tokens = _token_counts(getattr(response, "usage", None), request, text, tokens)
    return Completion(
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        logprobs=tokens if request.logprobs else None,
        finish_reason=reason or "stop",
        latency_s=latency_s,
        summary=summary,
    )


def _content(text: Any, reason: str | None) -> str:
    """The message content as an answer, or the fault it is (module docstring)."""
    if text is not None and not isinstance(text, str):
        raise MalformedResponse(f"the message content is a JSON {type(text).__name__}, not text")
    if not (text or "").strip() and reason == "length":  # the limit hit before any content (a reasoning model)
        raise DelibError("the server cut the answer off before any content (finish_reason length); raise max_tokens")
    if not (text or "").strip():  # e.g. a server that failed mid-answer: an error to retry, not an answer to cache
        content = "null" if text is None else "empty" if not text else "whitespace only"
        raise MalformedResponse(f"the message content is {content} (finish_reason {reason})")
    try:
        return clean_text(text)
    except BadText as err:
        raise MalformedResponse(f"the message content is {err}") from None


def _finish_reason(reason: Any) -> str | None:
    """The finish_reason, None (read as "stop") when absent or, with a warning, not text."""
    if reason is not None and not isinstance(reason, str):
        log.warning("the server's finish_reason is %r, not text; read as \"stop\"", reason)
        return None
    return reason


def _token_logprobs(content: Any, text: str, asked: bool) -> tuple[tuple[TokenLogprob, ...] | None,
                                                                    LogprobSummary | None]:
    """``choice.logprobs.content`` as TokenLogprob tuples with their summary (None, None without it); of the
    wrong shape, the fault it is (module docstring)."""
    if content is None:
        return None, None
    try:
        tokens = _tokens(content)
        return tokens, _summary(content, tokens, text) if tokens else None
    except (AttributeError, TypeError, ValueError) as err:  # errors.BadText is a ValueError
        why = " ".join(str(err).split())[:120]
        if asked:
            raise MalformedResponse(f"the log-probabilities are malformed ({why})") from None
        log.warning("the server sent log-probabilities nobody asked for, malformed (%s); ignored", why)
        return None, None


def _tokens(content: Any) -> tuple[TokenLogprob, ...]:
    """(token, logprob, top_logprobs) of each entry, each field checked: text, and finite numbers."""
    if not isinstance(content, list):
        raise TypeError(f"a JSON {type(content).__name__} where the list of tokens belongs")
    return tuple(TokenLogprob(_token(item.token), _logprob(item.logprob),
                              tuple((_token(alt.token), _logprob(alt.logprob)) for alt in _alternatives(item)))
                 for item in content)


def _alternatives(item: Any) -> list[Any]:
    top = getattr(item, "top_logprobs", None) or []
    if not isinstance(top, list):
        raise TypeError(f"top_logprobs is a JSON {type(top).__name__}, not a list")
    return top


def _token(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a token that is {value!r}, not text")
    return clean_text(value)


def _logprob(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"a log-probability that is {value!r}, not a finite number")
    return float(value)


def _summary(content: list[Any], tokens: tuple[TokenLogprob, ...], text: str) -> LogprobSummary | None:
    """The log-probability summary of the tokens: from their bytes where the server sends them (exact for a
    character split over tokens), else from their texts."""
    values = [t.logprob for t in tokens]
    if all(getattr(item, "bytes", None) for item in content):
        return from_pieces(values, [bytes(item.bytes) for item in content], text)
    return from_texts(values, [t.token for t in tokens], text)


def _token_counts(
    usage: Any, request: GenerationRequest, text: str, logprobs: tuple[TokenLogprob, ...] | None
) -> tuple[int, int]:
    """(prompt, completion) tokens from ``usage``, else the fallback described in the module docstring."""
    if usage is not None and not hasattr(usage, "prompt_tokens") and not hasattr(usage, "completion_tokens"):
        log.warning("the server's usage is %r, not token counts; estimated instead", usage)
    prompt = _count(getattr(usage, "prompt_tokens", None), "prompt_tokens")
    completion = _count(getattr(usage, "completion_tokens", None), "completion_tokens")
    if prompt is None:
        prompt = _estimate_tokens(sum(len(m.content) for m in request.messages))
    if completion is None:
        completion = len(logprobs) if logprobs else _estimate_tokens(len(text))
    return prompt, completion


def _count(value: Any, name: str) -> int | None:
    """A token count of ``usage``; None when absent or, with a warning, not a count."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value >= 0 and float(value).is_integer()):
        log.warning("the server's usage.%s is %r, not a count; estimated instead", name, value)
        return None
    return int(value)


def _estimate_tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)  # ceiling division
