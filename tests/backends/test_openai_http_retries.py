"""The OpenAI-compatible HTTP backend's retries against a scripted fake server (tests/fake_openai.py):
timeout, 5xx, 429, malformed JSON, null or empty content; Retry-After (seconds, HTTP dates, capped), a
warning per retry, the total time of a request (a trickled body ended by the attempt's deadline), immediate
failure on 4xx, clear errors when retries run out, and the options in --help.

The retry schedule (the waits, when the total runs out, what an attempt is given) is checked on a fake clock
(``FakeTime``) in exact seconds: no assertion here reads the machine's clock, and no wait is really waited."""

from __future__ import annotations

import asyncio
import email.utils
import re
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from deliberation.backends import make_backend, openai_http
from deliberation.backends.openai_http import OpenAIBackend
from deliberation.cli.main import build_parser
from deliberation.errors import DelibError
from deliberation.types import GenerationRequest, Message

from fake_openai import FakeOpenAI, backend, chat_completion, req


class FakeTime:
    """The backend's ``clock`` and ``sleep``: a clock that moves only when the backend waits before a retry (or a
    test moves it), each wait recorded and passed at once. An HTTP exchange takes no time on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []
        self.woken = 0  # waits that have ended

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)  # the other requests run meanwhile, as during a real wait
        self.woken += 1


def on_fake_time(server: FakeOpenAI, **kw: Any) -> tuple[OpenAIBackend, FakeTime]:
    """``backend(server, **kw)`` measuring its retry windows on a fresh ``FakeTime``."""
    b, fake = backend(server, **kw), FakeTime()
    b.clock, b.sleep = fake.clock, fake.sleep
    return b, fake


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
    server = serve(["429-after:7"])
    b, fake = on_fake_time(server)
    assert b.generate([req()])[0].text == "echo: hi"  # backoff_s is 0.01: the server's 7 s wins
    (line,) = warned(caplog)
    assert fake.waits == waits(caplog) == [7.0]  # waited as warned
    assert server.base_url in line and "max_in_flight" in line and "\n" not in line


@pytest.mark.timeout(30)
def test_retry_after_as_an_http_date(serve, monkeypatch) -> None:
    """A date is read as one: far ahead, the wait is the cap (read as a number it would be no wait at all, so
    the backoff). How many seconds a date is from now: ``test_a_retry_after_date_counts_from_now``."""
    monkeypatch.setattr(openai_http, "MAX_RETRY_AFTER_S", 7.0)
    b, fake = on_fake_time(serve(["429-after:Fri, 01 Jan 2100 00:00:00 GMT"]))
    assert b.generate([req()])[0].text == "echo: hi"
    assert fake.waits == [7.0]


NOW = email.utils.parsedate_to_datetime("Wed, 21 Oct 2015 07:28:00 GMT").timestamp()


def asks(value: str) -> Any:
    """A failed attempt whose answer carried ``Retry-After: value``."""
    return SimpleNamespace(response=SimpleNamespace(headers={"retry-after": value}))


def test_a_retry_after_date_counts_from_now() -> None:
    assert openai_http.retry_after(asks("Wed, 21 Oct 2015 07:28:03 GMT"), lambda: NOW) == 3.0
    assert openai_http.retry_after(asks("Wed, 21 Oct 2015 08:28:00 GMT"), lambda: NOW) == 3600.0
    assert openai_http.retry_after(asks("Wed, 21 Oct 2015 07:27:00 GMT"), lambda: NOW) == 0.0  # past: no wait
    assert openai_http.retry_after(asks("120"), lambda: NOW) == 120.0  # seconds do not depend on the clock
    assert openai_http.retry_after(asks("soon"), lambda: NOW) is None


@pytest.mark.timeout(30)
def test_retry_after_is_capped_and_fails_at_once_beyond_the_total(serve, caplog, monkeypatch) -> None:
    monkeypatch.setattr(openai_http, "MAX_RETRY_AFTER_S", 0.2)
    server = serve(["429-after:100000"])
    b, fake = on_fake_time(server)
    assert b.generate([req()])[0].text == "echo: hi"
    assert fake.waits == waits(caplog) == [0.2]
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
def test_the_backoff_doubles_until_the_retries_run_out(serve) -> None:
    server = serve([], default="500")
    b, fake = on_fake_time(server, backoff_s=0.5, max_retries=3)
    with pytest.raises(DelibError, match=r"after 4 attempts in 4 s .*max_retries=N \(now 3\)"):
        b.generate([req()])
    assert fake.waits == [0.5, 1.0, 2.0] and len(server.bodies) == 4


@pytest.mark.timeout(30)
def test_total_timeout_bounds_a_request_before_its_retries_run_out(serve) -> None:
    """After waits of 0.5, 1 and 2 s the next (4 s) would end past the total of 5 s: given up at 4 attempts of 51."""
    server = serve([], default="500")
    b, fake = on_fake_time(server, backoff_s=0.5, max_retries=50, total_timeout_s=5.0)
    with pytest.raises(DelibError, match="total_timeout_s=N"):
        b.generate([req()])
    assert fake.waits == [0.5, 1.0, 2.0] and len(server.bodies) == 4


@pytest.mark.timeout(60)
def test_an_attempt_gets_only_what_is_left_of_the_total(serve) -> None:
    """A wait of 4.7 s leaves 0.3 s of total_timeout_s=5 for the second attempt, far less than timeout_s: the
    hanging server is cut off then, as a timeout. Given the full timeout_s the attempt would outlast the hang
    (30 s) and end as a broken connection instead."""
    server = serve(["500"], default="hang")
    b, fake = on_fake_time(server, backoff_s=4.7, timeout_s=60.0, total_timeout_s=5.0)
    with pytest.raises(DelibError, match="total_timeout_s=N") as err:
        b.generate([req()])
    assert "APITimeoutError" in str(err.value) and "after 2 attempts" in str(err.value)
    assert fake.waits == [4.7] and len(server.bodies) == 2


@pytest.mark.timeout(60)
def test_the_deadline_ends_an_attempt_that_a_server_trickles(serve) -> None:
    """One byte every 0.2 s never trips httpx's per-read timeout of 1 s: unbounded, each attempt would take
    ~50 s and then answer (an endless trickle: never end); the deadline around the call ends it after
    timeout_s, as a timeout."""
    server = serve([], default="trickle", sleep_s=0.2)
    with pytest.raises(DelibError, match="after 2 attempts") as err:
        backend(server, timeout_s=1.0, max_retries=1).generate([req()])
    assert "APITimeoutError" in str(err.value) and len(server.bodies) == 2


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
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # +05:30: a naive reading would be 5.5 hours off
    time.tzset()
    try:
        assert openai_http.retry_after(asks("Wed, 21 Oct 2015 07:28:30 -0000"), lambda: NOW) == 30.0
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


class QueuedClient:
    """Stands in for ``openai.AsyncOpenAI`` on ``FakeTime``: request "a" fails at once (HTTP 500) the first time;
    "b" holds its slot for 10 s, ending only once "a"'s wait before its retry is over (so "a" is queued for the
    slot by then). Every attempt records the seconds it was given."""

    def __init__(self, fake: FakeTime, given: list[tuple[str, float]], **_: Any) -> None:
        import openai

        self.openai, self.fake, self.given = openai, fake, given
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    async def __aenter__(self) -> QueuedClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def create(self, timeout: Any, **body: Any) -> Any:
        import httpx

        content = body["messages"][-1]["content"]
        self.given.append((content, timeout.read))
        if (content, timeout.read) == self.given[0]:
            response = httpx.Response(500, request=httpx.Request("POST", "http://fake/v1/chat/completions"))
            raise self.openai.InternalServerError("scripted 500", response=response, body=None)
        if content == "b":
            while not self.fake.woken:
                await asyncio.sleep(0)
            self.fake.now += 10.0
        return self.openai.types.chat.ChatCompletion.model_validate(chat_completion(body))


def test_waiting_for_a_slot_before_a_retry_does_not_count_against_total_timeout(monkeypatch) -> None:
    """Request "a" fails at once, waits 1 s, then waits 10 s more for the one slot "b" holds: 11 s in all against
    a total_timeout_s of 5 s, but the 10 s are the client's queue, not the server's slowness, so the retry gets
    the 4 s the total leaves it, and answers."""
    import openai

    fake, given = FakeTime(), []
    monkeypatch.setattr(openai, "AsyncOpenAI", lambda **kw: QueuedClient(fake, given, **kw))
    b = OpenAIBackend("fake-model", "http://fake/v1", max_in_flight=1, backoff_s=1.0, total_timeout_s=5.0)
    b.clock, b.sleep = fake.clock, fake.sleep
    out = b.generate([req("a"), req("b")])
    assert [c.text for c in out] == ["echo: a", "echo: b"] and fake.waits == [1.0]
    assert given == [("a", 5.0), ("b", 5.0), ("a", 4.0)]  # counting the queue, the retry would get nothing
