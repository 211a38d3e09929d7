"""Log-probability summaries (backends/logprob_summary.py): the mean, the weakest window, and the final
answer's tokens found again in the recorded tail."""

from __future__ import annotations

import numpy as np
import pytest

from deliberation.backends.logprob_summary import (TAIL, WINDOW, answer_mean, chosen_logprob, from_pieces,
                                                   from_texts, summarize)
from deliberation.types import Completion, LogprobSummary, from_json, to_json


def spelled(pieces: list[str]) -> tuple[str, list[int]]:
    """The text the tokens ``pieces`` spell and where each ends."""
    ends = list(np.cumsum([len(p) for p in pieces]))
    return "".join(pieces), ends


def test_mean_and_lowest_window_of_a_known_sequence() -> None:
    values = [-0.1] * 40 + [-3.0] * WINDOW + [-0.1] * 40
    s = summarize(values, list(range(1, len(values) + 1)))
    assert s.mean == pytest.approx(np.mean(values), abs=1e-4)
    assert s.lowest_window == pytest.approx(-3.0)
    assert len(s.tail) == TAIL and len(s.tail_bounds) == TAIL + 1


def test_a_short_completion_is_one_window_and_an_empty_one_has_no_summary() -> None:
    s = summarize([-1.0, -2.0], [3, 5])
    assert s.lowest_window == pytest.approx(-1.5) and s.tail_bounds == (0, 3, 5)
    assert summarize([], []) is None


def test_the_final_answer_tokens_are_found_in_the_tail() -> None:
    pieces = ["The", " total", " is", " 4", "2", ".", " So", " 4", "2", "."]
    values = [-0.5, -0.5, -0.5, -9.0, -9.0, -0.5, -0.5, -1.0, -3.0, -0.5]
    text, ends = spelled(pieces)
    s = summarize(values, ends)
    assert answer_mean(s, text, "42") == pytest.approx(-2.0)  # the last "42": tokens " 4" and "2"
    assert answer_mean(s, text, "17") is None and answer_mean(s, text, None) is None


def test_an_answer_before_the_recorded_tail_is_absent_not_guessed() -> None:
    pieces = ["7"] + ["x"] * (TAIL + 5)
    text, ends = spelled(pieces)
    assert answer_mean(summarize([-1.0] * len(pieces), ends), text, "7") is None


def test_chosen_logprob_is_the_log_softmax() -> None:
    logits = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    expected = 2.0 - np.log(np.exp(logits.astype(np.float64)).sum())
    assert chosen_logprob(logits, 1) == pytest.approx(expected)


def test_completions_round_trip_with_and_without_a_summary() -> None:
    """Caches and stores written before summaries existed read back with none."""
    summary = LogprobSummary(-0.2, -1.0, (-0.1, -0.3), (0, 2, 4))
    with_it = Completion("abcd", 3, 2, summary=summary)
    assert from_json(Completion, to_json(with_it)) == with_it
    old = {k: v for k, v in to_json(with_it).items() if k != "summary"}
    assert from_json(Completion, old).summary is None


def test_a_summary_from_reported_tokens_ends_each_at_the_character_its_bytes_complete() -> None:
    """Servers report tokens as bytes; a character split over two tokens ends with the second, so the
    final answer's tokens are found as in the in-process backend's summary."""
    text = "x = é, so \\boxed{12}"
    pieces = [b"x", b" =", b" \xc3", b"\xa9", b",", b" so", b" \\boxed{", b"12", b"}"]
    assert b"".join(pieces).decode() == text
    summary = from_pieces([-0.1, -0.2, -0.3, -0.4, -0.5, -0.6, -0.7, -2.0, -0.9], pieces, text)
    assert summary.tail_bounds == (0, 1, 3, 4, 5, 6, 9, 17, 19, 20)
    assert answer_mean(summary, text, "12") == -2.0
    assert from_pieces([-1.0], [b"abc"], "ab").tail_bounds == (0, 2)  # bounded by the text
    assert from_pieces([], [], "") is None


def test_from_token_texts_a_split_character_costs_its_own_bounds_only_and_an_end_token_is_left_out() -> None:
    """Tokens decoded one by one (vLLM's engine, a server without bytes) read a split character as U+FFFD
    or nothing: those tokens end where the last whole one did, every other bound is exact; a trailing token
    that spells nothing of the text (end of sequence, a stop string) is left out, as llamacpp leaves it."""
    text = "x = é, so \\boxed{12}"
    values = [-0.1, -0.2, -0.3, -0.4, -0.5, -0.6, -0.7, -2.0, -0.9]
    texts = ["x", " =", " \ufffd", "\ufffd", ",", " so", " \\boxed{", "12", "}"]
    summary = from_texts(values, texts, text)
    assert summary.tail_bounds == (0, 1, 3, 3, 3, 6, 9, 17, 19, 20)  # bytes give (0, 1, 3, 4, 5, 6, 9, ...)
    assert answer_mean(summary, text, "12") == -2.0
    assert from_texts([*values, -0.01], [*texts, ""], text) == summary
    assert from_texts([*values, -0.01], [*texts, "<|im_end|>"], text) == summary
    pieces = [t.encode() for t in texts[:2]] + [b" \xc3", b"\xa9"] + [t.encode() for t in texts[4:]]
    assert from_pieces([*values, -0.01], [*pieces, b"<|im_end|>"], text) == from_pieces(values, pieces, text)
