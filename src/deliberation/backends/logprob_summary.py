"""Log-probability summaries of completions: made by backends that have the logits, read at replay time.

A backend that samples from the logits itself (llamacpp) knows each sampled token's log-probability at no
extra model cost; servers (llama.cpp's, vLLM's) and vLLM's engine report it when asked
(``from_pieces``). It keeps a small summary on the completion (``types.LogprobSummary``) rather than every
token, so tree stores can compute log-probability confidence signals offline
(docs/design.md, section Zero-cost signals): the mean over
all tokens (Kadavath et al. 2022's sequence likelihood), the weakest ``WINDOW``-token stretch (DeepConf's
lowest group confidence, Fu et al. 2025), and the final answer's tokens, found in the recorded tail.
"""

from __future__ import annotations

import codecs
from typing import Sequence

import numpy as np

from deliberation.types import LogprobSummary

WINDOW = 16
"""Tokens per sliding window of ``LogprobSummary.lowest_window``."""
TAIL = 64
"""Last tokens whose log-probabilities are kept: a final answer and the sentence around it fit."""
DIGITS = 4
"""Decimals kept (1e-4 nats is far below any signal; keeps stores small)."""


def chosen_logprob(logits: np.ndarray, token: int) -> float:
    """log softmax(logits)[token] over the raw logits (before temperature). The exponentials stay in the
    logits' float32 (9x faster than float64 over a 152k vocabulary, ~0.15 ms a token) and are summed in
    float64: within 1e-6 nats of the float64 value, far below the 1e-4 kept."""
    top = logits.max()
    return float(logits[token] - top - np.log(np.exp(logits - top).sum(dtype=np.float64)))


def summarize(logprobs: Sequence[float], ends: Sequence[int]) -> LogprobSummary | None:
    """The summary of a completion whose k-th token has log-probability ``logprobs[k]`` and ends at
    character ``ends[k]`` of the text; None for an empty completion (nothing to summarize)."""
    if not logprobs:
        return None
    values = np.asarray(logprobs, dtype=np.float64)  # [T]
    width = min(WINDOW, len(values))
    sums = np.convolve(values, np.ones(width), mode="valid")  # [T - width + 1]: sum of each window
    first = max(len(values) - TAIL, 0)
    return LogprobSummary(mean=round(float(values.mean()), DIGITS),
                          lowest_window=round(float(sums.min() / width), DIGITS),
                          tail=tuple(round(float(v), DIGITS) for v in values[first:]),
                          tail_bounds=(int(ends[first - 1]) if first else 0, *(int(e) for e in ends[first:])))


def from_pieces(logprobs: Sequence[float], pieces: Sequence[bytes], text: str) -> LogprobSummary | None:
    """The summary of a completion reported token by token with each token's bytes (vLLM's server does):
    token k has log-probability ``logprobs[k]`` and spells ``pieces[k]``; it ends at the character its bytes
    complete (a character split over tokens ends with its last byte), bounded by ``text``."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    ends, chars = [], 0
    for piece in pieces:
        chars += len(decoder.decode(piece))
        ends.append(min(chars, len(text)))
    return _spelled(logprobs, ends, text)


SPLIT = 4
"""Characters a token may have to step over to be found: the pieces of a split character read as nothing."""


def from_texts(logprobs: Sequence[float], pieces: Sequence[str], text: str) -> LogprobSummary | None:
    """The same from each token's text as decoded alone (vLLM's engine, servers without bytes), where a
    token holding part of a character reads as "" or U+FFFD: each token is found in ``text`` from where the
    last one ended, so such a token ends where the last whole one did and the next token steps over the
    character (its bounds are off by that character, the others exact)."""
    ends, cursor = [], 0
    for piece in pieces:
        at = text.find(piece, cursor, cursor + len(piece) + SPLIT) if piece and "\ufffd" not in piece else -1
        cursor = at + len(piece) if at >= 0 else cursor
        ends.append(cursor)
    return _spelled(logprobs, ends, text)


def _spelled(logprobs: Sequence[float], ends: list[int], text: str) -> LogprobSummary | None:
    """``summarize`` without the trailing tokens that spell nothing of ``text`` (an end-of-sequence token, a
    stop string's tokens): llamacpp's summaries leave the end-of-sequence token out too."""
    n = len(ends)
    while n > 1 and ends[n - 1] == ends[n - 2] == len(text):
        n -= 1
    return summarize(logprobs[:n], ends[:n])


def answer_mean(summary: LogprobSummary, text: str, answer: str | None) -> float | None:
    """Mean log-probability of the tokens that spell the last occurrence of ``answer`` in ``text`` (its
    final answer); None when there is no answer, it is not in the text, or it begins before the tail."""
    start = text.rfind(answer) if answer else -1
    if start < summary.tail_bounds[0]:
        return None
    stop = start + len(answer or "")
    spans = zip(summary.tail, summary.tail_bounds, summary.tail_bounds[1:])
    inside = [lp for lp, lo, hi in spans if hi > start and lo < stop]
    return round(sum(inside) / len(inside), DIGITS) if inside else None
