"""The OpenAI-compatible HTTP backend's retries against a scripted fake server (tests/fake_openai.py):
timeout, 5xx, 429, malformed JSON, null or empty content; Retry-After (seconds, HTTP dates, capped), a
warning per retry, the total time of a request (a trickled body included), immediate failure on 4xx,
clear errors when retries run out, and the options in --help."""

from __future__ import annotations

import email.utils
import re
import time
from pathlib import Path

import pytest

from deliberation.backends import make_backend, openai_http
from deliberation.cli.main import build_parser
from deliberation.errors import DelibError
from deliberation.types import GenerationRequest, Message

from fake_openai import backend, req


@pytest.mark.parametrize("failure", ["500", "429", "malformed", "null-content", "empty-content"])
def test_transient_failure_is_retried(serve, failure: str) -> None:
    server = serve([failure])
    out = backend(server).generate([req()])
    assert out[0].text == "echo: hi"
    assert len(server.bodies) == 2


@pytest.mark.timeout(30)
def test_timeout_is_retried(serve) -> None:
    server = serve(["sleep"], sleep_s=3.0)
    out = backend(server, timeout_s=0.3).generate([req()])
    assert out[0].text == "echo: hi"
    assert len(server.bodies) == 2


@pytest.mark.timeout(30)
def test_persistent_failure_gives_clear_error_after_retries(serve) -> None:
    server = serve([], default="500")
    with pytest.raises(DelibError) as err:
        backend(server, max_retries=2).generate([req()])
    message = str(err.value)
    assert len(server.bodies) == 3
    assert server.base_url in message and "after 3 attempts" in message and "500" in message
    assert "\n" not in message


def test_client_error_fails_at_once(serve) -> None:
    server = serve(["400"])
    with pytest.raises(DelibError, match="HTTP 400") as err:
        backend(server).generate([req()])
    assert len(server.bodies) == 1
    assert "OPENAI_API_KEY" in str(err.value) and "\n" not in str(err.value)
    assert "--backend-opt sampler=server" in str(err.value)  # a hosted API refusing top_k, say


def warned(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The backend's warnings."""
    return [r.getMessage() for r in caplog.records if r.name == openai_http.__name__ and r.levelname == "WARNING"]


def waits(caplog: pytest.LogCaptureFixture) -> list[float]:
    """The waits the retry warnings announce."""
    return [float(w) for line in warned(caplog) for w in re.findall(r"retrying in ([0-9.]+) s", line)]


@pytest.mark.timeout(30)
def test_retry_after_in_seconds_is_honoured_and_warned(serve, caplog: pytest.LogCaptureFixture) -> None:
    server = serve(["429-after:1"])
    assert backend(server).generate([req()])[0].text == "echo: hi"  # backoff_s is 0.01: the server's 1 s wins
    (line,) = warned(caplog)
    assert waits(caplog) == [1.0] and server.base_url in line and "max_in_flight" in line and "\n" not in line


@pytest.mark.timeout(30)
def test_retry_after_as_an_http_date(serve, caplog: pytest.LogCaptureFixture) -> None:
    server = serve([f"429-after:{email.utils.formatdate(time.time() + 3, usegmt=True)}"])
    assert backend(server).generate([req()])[0].text == "echo: hi"
    assert len(waits(caplog)) == 1 and 1.0 < waits(caplog)[0] <= 3.0  # the date has whole seconds


@pytest.mark.timeout(30)
def test_retry_after_is_capped_and_fails_at_once_beyond_the_total(serve, caplog, monkeypatch) -> None:
    monkeypatch.setattr(openai_http, "MAX_RETRY_AFTER_S", 0.2)
    server = serve(["429-after:100000"])
    assert backend(server).generate([req()])[0].text == "echo: hi"
    assert waits(caplog) == [0.2]
    monkeypatch.setattr(openai_http, "MAX_RETRY_AFTER_S", 60.0)
    server = serve([], default="429-after:100000")
    with pytest.raises(DelibError, match="asked to retry after 100000 s") as err:
        backend(server, total_timeout_s=5.0).generate([req()])
    assert len(server.bodies) == 1 and "total_timeout_s" in str(err.value)


@pytest.mark.timeout(30)
def test_a_server_that_never_answers_is_warned_about_and_given_up(serve, caplog) -> None:
    server = serve([], default="hang")
    with pytest.raises(DelibError, match="APITimeoutError") as err:
        backend(server, timeout_s=0.3, max_retries=1).generate([req()])
    (line,) = warned(caplog)  # one retry, one warning
    assert len(server.bodies) == 2 and server.base_url in line and "timeout_s=0.3" in line
    assert "timeout_s=N" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.timeout(30)
def test_total_timeout_bounds_a_request_before_its_retries_run_out(serve) -> None:
    server = serve([], default="hang")
    with pytest.raises(DelibError, match="total_timeout_s=N"):
        backend(server, timeout_s=0.4, max_retries=50, total_timeout_s=1.0).generate([req()])
    assert len(server.bodies) <= 4  # attempts that fit in 1 s of 0.4 s each, not 51


@pytest.mark.timeout(60)
def test_total_timeout_bounds_a_server_that_trickles_its_answer(serve) -> None:
    """One byte every 0.2 s never trips httpx's per-read timeout of 1 s: unbounded, the first attempt alone
    would take ~50 s (and an endless trickle forever); the deadline ends each attempt after timeout_s."""
    server = serve([], default="trickle", sleep_s=0.2)
    began = time.perf_counter()
    with pytest.raises(DelibError, match="total_timeout_s=N") as err:
        backend(server, timeout_s=1.0, max_retries=50, total_timeout_s=2.5).generate([req()])
    assert time.perf_counter() - began < 15 and "APITimeoutError" in str(err.value)
    assert len(server.bodies) <= 4  # attempts that fit in 2.5 s of 1 s each, not 51


@pytest.mark.timeout(30)
@pytest.mark.parametrize("content", ["null", "empty"])
def test_null_or_empty_content_is_never_cached_as_an_empty_answer(serve, tmp_path: Path, content: str) -> None:
    server = serve([f"{content}-content"] * 2)
    cached = make_backend("openai", cache=str(tmp_path / "responses.sqlite"), model="fake-model",
                          base_url=server.base_url, max_retries=1, backoff_s=0.01)  # fmt: skip
    with pytest.raises(DelibError, match=f"content is {content}"):
        cached.generate([req()])
    assert cached.generate([req()])[0].text == "echo: hi"  # asked again: nothing was cached
    assert len(server.bodies) == 3


def test_the_retry_and_timeout_options_are_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for option in ("timeout_s=60.0", "max_retries=4", "total_timeout_s=180.0", "backoff_s=0.5", "max_in_flight=8",
                   "sampler=plain", "summaries=False"):
        assert option in text


def test_null_content_cut_off_by_the_limit_is_an_error_naming_the_fix_not_a_retry() -> None:
    """A reasoning model that spends max_tokens before any content answers null with finish_reason length
    every time: retrying only repeats it."""
    from types import SimpleNamespace

    choice = SimpleNamespace(message=SimpleNamespace(content=None), finish_reason="length", logprobs=None)
    request = GenerationRequest((Message("user", "hi"),), max_tokens=8)
    with pytest.raises(DelibError, match="raise max_tokens"):
        openai_http.completion_from_response(SimpleNamespace(choices=[choice], usage=None), request, 0.1)
    choice.finish_reason = "stop"
    with pytest.raises(openai_http.MalformedResponse):  # a failed answer: retried
        openai_http.completion_from_response(SimpleNamespace(choices=[choice], usage=None), request, 0.1)


def test_a_retry_after_date_in_minus_0000_is_read_as_utc(monkeypatch) -> None:
    """email.utils parses "-0000" as a naive datetime; read as local time it would be off by the UTC offset."""
    from types import SimpleNamespace

    monkeypatch.setenv("TZ", "Asia/Kolkata")  # +05:30: a naive reading would be 5.5 hours off
    time.tzset()
    try:
        value = email.utils.formatdate(time.time() + 30)[:-5] + "-0000"
        err = SimpleNamespace(response=SimpleNamespace(headers={"retry-after": value}))
        assert 25 <= openai_http.retry_after(err) <= 31
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


@pytest.mark.timeout(30)
def test_waiting_for_a_slot_before_a_retry_does_not_count_against_total_timeout(serve) -> None:
    """Request A fails at once; its retry waits ~0.8 s for the one slot B holds, then itself takes 0.8 s: 1.6 s
    in all against a total_timeout_s of 1 s, but the wait is the client's queue, not the server's slowness,
    so the retry gets its full time and answers."""
    server = serve(["500", "sleep", "sleep"], sleep_s=0.8)
    out = backend(server, max_in_flight=1, backoff_s=0.01, timeout_s=5.0, total_timeout_s=1.0).generate(
        [req("a"), req("b")])
    assert [c.text for c in out] == ["echo: a", "echo: b"] and len(server.bodies) == 3
