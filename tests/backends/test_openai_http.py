"""The OpenAI-compatible HTTP backend against a scripted fake server on 127.0.0.1: request mapping,
response mapping, retries (timeout, 5xx, 429, malformed JSON, null or empty content), Retry-After, a warning
per retry, the total time of a request (a trickled body included), immediate failure on 4xx, clear errors
when retries run out or nothing listens, the bound on requests in flight, and the options in --help."""

from __future__ import annotations

import asyncio
import email.utils
import json
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

from deliberation.backends import make_backend, openai_http
from deliberation.backends.openai_http import OpenAIBackend
from deliberation.cli.main import build_parser
from deliberation.errors import DelibError
from deliberation.types import GenerationRequest, Message


class FakeOpenAI:
    """A chat-completions server that plays ``script`` (one behaviour per request, then ``default``).

    Behaviours: "ok", "no-usage", "500", "429", "400", "malformed", "sleep" (answers after ``sleep_s``),
    "hold" (answers ok after ``hold_s``; used to observe concurrency), "429-after:VALUE" (429 with a
    Retry-After header), "hang" (never answers), "null-content" / "empty-content" (200 whose message content
    is null / ""), "trickle" (an ok answer sent one byte every ``sleep_s``). It records every request body
    and the largest number of requests it was handling at once.
    """

    def __init__(self, script: list[str], default: str = "ok", sleep_s: float = 2.0, hold_s: float = 0.0):
        self.script = list(script)
        self.default = default
        self.sleep_s = sleep_s
        self.hold_s = hold_s
        self.bodies: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def next_behaviour(self, body: dict[str, Any]) -> str:
        with self.lock:
            self.bodies.append(body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return self.script.pop(0) if self.script else self.default

    def done(self) -> None:
        with self.lock:
            self.in_flight -= 1


def chat_completion(body: dict[str, Any], usage: bool = True) -> dict[str, Any]:
    """A well-formed response echoing the last message, with logprobs when asked for."""
    text = "echo: " + body["messages"][-1]["content"]
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}
    if body.get("logprobs"):
        top = [{"token": f"alt{j}", "logprob": -1.0 - j, "bytes": None} for j in range(body.get("top_logprobs", 0))]
        pieces = ("echo", ":", " " + body["messages"][-1]["content"])  # they spell the text
        tokens = [{"token": t, "logprob": -0.5, "bytes": None, "top_logprobs": top} for t in pieces]
        choice["logprobs"] = {"content": tokens}
    response = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"], "choices": [choice]}
    if usage:
        response["usage"] = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    return response


def _handler(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            behaviour = server.next_behaviour(body)
            try:
                self._play(behaviour, body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)
            finally:
                server.done()

        def _play(self, behaviour: str, body: dict[str, Any]) -> None:
            if behaviour in ("sleep", "hold", "hang"):
                time.sleep({"sleep": server.sleep_s, "hold": server.hold_s, "hang": 30.0}[behaviour])
            if behaviour == "hang":
                return
            if behaviour.startswith("429-after:"):
                error = json.dumps({"error": {"message": "slow down"}}).encode()
                self._send(429, error, {"Retry-After": behaviour.split(":", 1)[1]})
            elif behaviour in ("null-content", "empty-content"):
                response = chat_completion(body)
                response["choices"][0]["message"]["content"] = None if behaviour == "null-content" else ""
                response["choices"][0]["finish_reason"] = "stop"  # a failed answer, not one cut off by the limit
                self._send(200, json.dumps(response).encode())
            elif behaviour in ("500", "429", "400"):
                self._send(int(behaviour), json.dumps({"error": {"message": f"scripted {behaviour}"}}).encode())
            elif behaviour == "malformed":
                self._send(200, b'{"choices": [{"message": ')
            else:
                payload = json.dumps(chat_completion(body, usage=behaviour != "no-usage")).encode()
                self._send(200, payload, trickle_s=server.sleep_s if behaviour == "trickle" else 0.0)

        def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None,
                  trickle_s: float = 0.0) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            for at in range(0, len(payload), 1 if trickle_s else len(payload)):  # bounded by the payload
                self.wfile.write(payload[at : at + (1 if trickle_s else len(payload))])
                time.sleep(trickle_s)

        def log_message(self, *args: Any) -> None:
            """Keep the test output clean."""

    return Handler


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[FakeOpenAI] = []

    def start(script: list[str], **kw: Any) -> FakeOpenAI:
        server = FakeOpenAI(script, **kw)
        threading.Thread(target=server.httpd.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.httpd.shutdown()
        server.httpd.server_close()


def backend(server: FakeOpenAI, **kw: Any) -> OpenAIBackend:
    options = {"timeout_s": 5.0, "max_retries": 3, "backoff_s": 0.01, **kw}
    return OpenAIBackend(model="fake-model", base_url=server.base_url, **options)


def req(content: str = "hi", **kw: Any) -> GenerationRequest:
    return GenerationRequest(messages=(Message("system", "be brief"), Message("user", content)), **kw)


def test_request_and_response_mapping(serve) -> None:
    server = serve([])
    out = backend(server).generate([req(max_tokens=9, temperature=0.2, seed=42, stop=("\n\n",))])
    assert out[0].text == "echo: hi"
    assert (out[0].prompt_tokens, out[0].completion_tokens) == (11, 3)
    assert out[0].finish_reason == "length" and out[0].logprobs is None and not out[0].cached
    sent = server.bodies[0]
    assert sent["model"] == "fake-model" and sent["messages"][0] == {"role": "system", "content": "be brief"}
    assert (sent["max_tokens"], sent["temperature"], sent["seed"], sent["stop"]) == (9, 0.2, 42, ["\n\n"])
    assert "logprobs" not in sent and out[0].summary is None


def test_with_summaries_every_completion_carries_a_logprob_summary(serve) -> None:
    """As the llamacpp backend's do: the tree store's log-probability signals then exist on a server too."""
    server = serve([])
    out = backend(server, summaries=True).generate([req("hi")])[0]
    assert (server.bodies[0]["logprobs"], server.bodies[0]["top_logprobs"]) == (True, 0)  # not returned:
    assert out.logprobs is None and out.summary is not None
    assert out.summary.mean == -0.5 and out.summary.tail == (-0.5, -0.5, -0.5)
    assert out.summary.tail_bounds == (0, 4, 5, 8) and out.text == "echo: hi"
    assert backend(server, supports_logprobs=False, summaries=True).generate([req("hi")])[0].summary is None


PLAIN = {"top_p": 1.0, "top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0, "repetition_penalty": 1.0,
         "presence_penalty": 0.0, "frequency_penalty": 0.0}


def test_plain_sampling_is_asked_for_unless_the_server_defaults_are_chosen(serve) -> None:
    """Servers add samplers of their own (llama-cpp-python's: top_k 40, top_p 0.95, min_p 0.05, repeat_penalty
    1.1; vLLM's: the model's generation_config): by default every one is switched off, as the other backends
    sample; ``sampler=server`` leaves them to the server, under the cache scope such requests always had."""
    server = serve([])
    plain, own = backend(server), backend(server, sampler="server")
    plain.generate([req()])
    own.generate([req()])
    assert {k: server.bodies[0].get(k) for k in PLAIN} == PLAIN
    assert not set(PLAIN) & set(server.bodies[1])
    assert own.cache_scope == f"fake-model at {server.base_url}" != plain.cache_scope
    with pytest.raises(DelibError, match="unknown sampler 'nucleus'; use plain .* or server"):
        backend(server, sampler="nucleus")


def test_logprobs_are_requested_and_mapped(serve) -> None:
    server = serve([])
    out = backend(server).generate([req(logprobs=True, top_logprobs=2)])[0]
    assert server.bodies[0]["logprobs"] is True and server.bodies[0]["top_logprobs"] == 2
    assert [t.token for t in out.logprobs] == ["echo", ":", " hi"]
    assert out.logprobs[0].logprob == -0.5
    assert out.logprobs[0].top == (("alt0", -1.0), ("alt1", -2.0))
    chosen_only = backend(server).generate([req(logprobs=True)])[0]
    assert server.bodies[1]["top_logprobs"] == 0  # sent even when 0: llama-cpp's server needs it
    assert len(chosen_only.logprobs) == 3 and chosen_only.logprobs[0].top == ()


def test_logprobs_not_sent_when_backend_declares_no_support(serve) -> None:
    server = serve([])
    out = backend(server, supports_logprobs=False).generate([req(logprobs=True, top_logprobs=2)])[0]
    assert "logprobs" not in server.bodies[0] and out.logprobs is None


def test_missing_usage_falls_back_to_estimates(serve) -> None:
    server = serve(["no-usage", "no-usage"])
    plain, with_lp = backend(server).generate([req("abcdefgh"), req("abcdefgh", logprobs=True)])
    assert plain.completion_tokens == len("echo: abcdefgh") // 4 + 1  # ceil(14 / 4)
    assert plain.prompt_tokens == len("be brief" + "abcdefgh") // 4  # 16 / 4
    assert with_lp.completion_tokens == 3  # one per returned logprob entry


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


def test_max_in_flight_bounds_concurrency(serve) -> None:
    server = serve([], default="hold", hold_s=0.3)
    out = backend(server, max_in_flight=2).generate([req(str(i)) for i in range(6)])
    assert [c.text for c in out] == [f"echo: {i}" for i in range(6)]  # request order kept
    assert server.max_in_flight == 2


@pytest.mark.timeout(30)
def test_unreachable_server_gives_clear_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(DelibError) as err:
        OpenAIBackend("m", url, timeout_s=2.0, max_retries=1, backoff_s=0.01).generate([req()])
    assert url in str(err.value) and "APIConnectionError" in str(err.value)


def test_works_from_a_thread_and_inside_a_running_event_loop(serve) -> None:
    server = serve([])
    b = backend(server)
    results: list[str] = []
    worker = threading.Thread(target=lambda: results.append(b.generate([req("t")])[0].text))
    worker.start()
    worker.join(timeout=30)

    async def inside_loop() -> str:
        return b.generate([req("loop")])[0].text

    results.append(asyncio.run(inside_loop()))
    assert results == ["echo: t", "echo: loop"]


def test_registry_builds_it_and_empty_batch_needs_no_server() -> None:
    b = make_backend("openai", model="m", base_url="http://127.0.0.1:9/v1")
    assert isinstance(b, OpenAIBackend) and b.name == "openai" and b.supports_logprobs
    assert b.generate([]) == []


def test_invalid_options_and_missing_package(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DelibError, match="max_in_flight"):
        OpenAIBackend("m", "http://x/v1", max_in_flight=0)
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(DelibError, match=r"pip install 'deliberation\[openai\]'"):
        OpenAIBackend("m", "http://x/v1")


# --- Retry-After, warnings, the time a request may take, null content, --help ---------------------------


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
