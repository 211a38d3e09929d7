"""Servers that half-answer (tests/fake_openai.py's HALF_ANSWERS): an answer with no usable content is retried
and never returned or cached; a body cut short, one that does not decode and one that is not UTF-8 are each
named for what they are; a Retry-After never shortens the backoff; malformed optional fields are refused
when asked for, else ignored with a warning. Inputs differ from the issue's examples on purpose."""

from __future__ import annotations

import json
import socket
import sqlite3
from types import SimpleNamespace

import pytest

from deliberation.backends import openai_response
from deliberation.backends.cache import CachedBackend
from deliberation.errors import DelibError
from deliberation.types import Completion, GenerationRequest

from fake_openai import backend, req


def warnings_of(caplog: pytest.LogCaptureFixture, module: object) -> list[str]:
    name = getattr(module, "__name__")
    return [r.getMessage() for r in caplog.records if r.name == name and r.levelname == "WARNING"]


def refused(server, **options: object) -> str:
    """The one-line error of a request every attempt of which fails, after its retries."""
    with pytest.raises(DelibError) as err:
        backend(server, max_retries=1, **options).generate([req()])
    message = str(err.value)
    assert "\n" not in message and len(server.bodies) == 2, message  # retried once, then given up
    return message


# --- no usable content: retried, never returned, never cached ------------------------------------------------


@pytest.mark.parametrize("content", ["\\t\\n \\u3000", "\\r\\n", "\\udfff tail", "\\ud800"])
def test_content_that_is_blank_or_not_unicode_is_retried_then_answered(serve, content: str) -> None:
    """Whitespace of any kind (a tab, CRLF, an ideographic space) and lone surrogates (a low one, a high one
    alone) are faults to retry, as null and "" are."""
    server = serve([f"content:{content}"])
    assert backend(server).generate([req()])[0].text == "echo: hi"
    assert len(server.bodies) == 2


def test_blank_content_is_never_cached(serve, tmp_path) -> None:
    server = serve([], default="content:\\n\\n")
    cached = CachedBackend(backend(server, max_retries=1), tmp_path / "c.sqlite")
    with pytest.raises(DelibError, match="whitespace only"):
        cached.generate([req()])
    assert sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT COUNT(*) FROM completions").fetchone() == (0,)
    server.default = "ok"
    first, again = cached.generate([req()])[0], cached.generate([req()])[0]
    assert (first.text, first.cached, again.cached) == ("echo: hi", False, True)


class BlankBackend:
    """A backend (any, not only HTTP) whose first answer to each request is blank, then real text."""

    name, model, supports_logprobs = "blank", "m", False

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        self.calls += 1
        return [Completion(" \u2003\n" if self.calls == 1 else "42", 3, 1) for _ in requests]

    def close(self) -> None:
        pass


def test_the_cache_stores_no_completion_without_content(tmp_path) -> None:
    inner = BlankBackend()
    cache = CachedBackend(inner, tmp_path / "c.sqlite")
    assert cache.generate([req()])[0].text == " \u2003\n"  # returned as it came, not stored
    assert cache.generate([req()])[0].text == "42" and inner.calls == 2  # asked again
    assert cache.generate([req()])[0].cached and inner.calls == 2  # a real answer is stored


def test_content_of_another_type_is_a_malformed_answer(serve) -> None:
    assert "JSON list, not text" in refused(serve([], default='body:{"choices": [{"message": {"content": ["a"]}}]}'))


# --- each fault named for what it is ------------------------------------------------------------------------


@pytest.mark.parametrize(("fault", "named"), [
    ("cut", "closed the connection before its whole answer arrived"),
    ("gzip-broken", "body does not decode"),
    ("not-utf8", "not UTF-8 text (byte 0xe9"),
    ("body:null", "not with a usable chat completion"),
])
def test_each_half_answer_is_named_for_what_it_is(serve, fault: str, named: str) -> None:
    message = refused(serve([], default=fault))
    assert named in message, message
    assert "nothing answers there" not in message  # only a server that does not listen gets that


@pytest.mark.timeout(30)
def test_nothing_listening_is_named_with_its_address_and_told_to_fix_base_url() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"  # closed again: nothing listens there
    with pytest.raises(DelibError, match="nothing answers there: start the server or fix option base_url") as err:
        backend(SimpleNamespace(base_url=url), max_retries=1).generate([req()])
    assert url in str(err.value) and "APIConnectionError" in str(err.value)


# --- waits have a floor ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["-30", "0", "nan", "-inf", "Thu, 01 Jan 1970 00:00:00 GMT"])
def test_a_retry_after_never_shortens_the_backoff(value: str) -> None:
    """Negative, zero, not a number, or a date long past: the wait is the backoff, 0.5 s then 1 s then 2 s."""
    b = backend(SimpleNamespace(base_url="http://127.0.0.1:9/v1"), backoff_s=0.5)
    err = SimpleNamespace(response=SimpleNamespace(headers={"retry-after": value}))
    assert [b._wait_before_retry(err, attempt, 0.0) for attempt in range(3)] == [0.5, 1.0, 2.0]


def test_a_longer_retry_after_lengthens_the_wait_up_to_its_cap() -> None:
    b = backend(SimpleNamespace(base_url="http://127.0.0.1:9/v1"), backoff_s=0.5, total_timeout_s=1000.0)
    err = SimpleNamespace(response=SimpleNamespace(headers={"retry-after": "7"}))
    assert b._wait_before_retry(err, 0, 0.0) == 7.0
    err.response.headers["retry-after"] = "100000"
    assert b._wait_before_retry(err, 0, 0.0) == 60.0


@pytest.mark.timeout(30)
def test_a_negative_retry_after_from_a_server_waits_the_backoff(serve, caplog) -> None:
    from deliberation.backends import openai_http

    server = serve(["429-after:-12"])
    assert backend(server, backoff_s=0.3).generate([req()])[0].text == "echo: hi"
    (line,) = warnings_of(caplog, openai_http)
    assert "retrying in 0.3 s" in line


# --- malformed optional fields ----------------------------------------------------------------------------


BAD_LOGPROBS = [
    {"content": {"token": "a"}},  # an object where the list goes
    {"content": [{"token": "echo", "logprob": None, "top_logprobs": []}]},  # a null log-probability
    {"content": [{"token": "echo", "logprob": "low", "top_logprobs": []}]},  # text where a number goes
    {"content": [{"token": 7, "logprob": -0.5, "top_logprobs": []}]},  # a token that is not text
    {"content": [{"token": "echo", "logprob": -0.5, "top_logprobs": {"a": 1}}]},  # alternatives not a list
]


@pytest.mark.parametrize("logprobs", BAD_LOGPROBS)
def test_malformed_logprobs_are_refused_when_asked_for(serve, logprobs: dict) -> None:
    server = serve([], default=f"logprobs:{json.dumps(logprobs)}")
    with pytest.raises(DelibError, match="log-probabilities are malformed") as err:
        backend(server, max_retries=1).generate([req(logprobs=True, top_logprobs=1)])
    assert "\n" not in str(err.value) and len(server.bodies) == 2


@pytest.mark.parametrize("logprobs", BAD_LOGPROBS[:3])
def test_malformed_logprobs_nobody_asked_for_are_ignored_with_a_warning(serve, logprobs: dict, caplog) -> None:
    server = serve([], default=f"logprobs:{json.dumps(logprobs)}")
    out = backend(server).generate([req()])[0]
    assert out.text == "echo: hi" and out.summary is None and out.logprobs is None
    assert any("malformed" in w for w in warnings_of(caplog, openai_response))


def test_non_finite_logprobs_are_malformed() -> None:
    item = SimpleNamespace(token="x", logprob=float("-inf"), top_logprobs=[], bytes=None)
    choice = SimpleNamespace(message=SimpleNamespace(content="x"), finish_reason="stop",
                             logprobs=SimpleNamespace(content=[item]))
    with pytest.raises(openai_response.MalformedResponse, match="not a finite number"):
        openai_response.completion_from_response(SimpleNamespace(choices=[choice], usage=None), req(), 0.1, True)


@pytest.mark.parametrize("usage, warned", [({"prompt_tokens": -3, "completion_tokens": 2.5}, "not a count"),
                                           ({"prompt_tokens": "11", "completion_tokens": True}, "not a count"),
                                           ("lots", "usage is 'lots', not token counts")])
def test_usage_that_is_not_counts_is_estimated_with_a_warning(serve, usage, warned, caplog) -> None:
    server = serve([f"usage:{json.dumps(usage)}"])
    out = backend(server).generate([req("a question of some length")])[0]
    estimated = backend(serve(["no-usage"])).generate([req("a question of some length")])[0]
    assert (out.prompt_tokens, out.completion_tokens) == (estimated.prompt_tokens, estimated.completion_tokens)
    assert any(warned in w and "estimated instead" in w for w in warnings_of(caplog, openai_response))


@pytest.mark.parametrize("reason", [["stop"], 3, {"why": "stop"}])
def test_a_finish_reason_that_is_not_text_is_read_as_stop_with_a_warning(serve, reason, caplog) -> None:
    out = backend(serve([f"finish:{json.dumps(reason)}"])).generate([req()])[0]
    assert out.finish_reason == "stop" and out.text == "echo: hi"
    assert any("finish_reason" in w for w in warnings_of(caplog, openai_response))
