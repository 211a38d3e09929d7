"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 for the HTTP backend's tests
(tests/backends/test_openai_http*.py; the ``serve`` fixture in tests/backends/conftest.py starts and stops
it), and the backend and request those tests send through it."""

from __future__ import annotations

import gzip
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


from deliberation.backends.openai_http import OpenAIBackend
from deliberation.types import GenerationRequest, Message


class FakeOpenAI:
    """A chat-completions server that plays ``script`` (one behaviour per request, then ``default``).

    Behaviours: "ok", "no-usage", "500", "429", "400", "malformed", "sleep" (answers after ``sleep_s``),
    "hold" (answers ok after ``hold_s``; used to observe concurrency), "429-after:VALUE" (429 with a
    Retry-After header), "hang" (never answers), "null-content" / "empty-content" (200 whose message content
    is null / ""), "trickle" (an ok answer sent one byte every ``sleep_s``). Answers that go wrong half way
    (``HALF_ANSWERS``): "content:TEXT" (a 200 whose content is TEXT, JSON-escaped as given: "content:\\ud83d"
    is a lone surrogate), "cut" (the connection closed half way through the body), "gzip-broken" (a body
    declared gzip that is not), "not-utf8" (a byte that is not UTF-8 in the content), "logprobs:JSON" (the
    choice's logprobs replaced by JSON), "usage:JSON" (the usage replaced by JSON), "finish:JSON" (the
    finish_reason replaced by JSON), "body:TEXT" (TEXT as the whole body). It records every request body
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


HALF_ANSWERS = ("content", "cut", "gzip-broken", "not-utf8", "logprobs", "usage", "finish", "body")
"""Behaviours of answers that go wrong half way (``FakeOpenAI``)."""


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
            elif behaviour.partition(":")[0] in HALF_ANSWERS:
                self._half_answer(*behaviour.partition(":")[::2], body)
            else:
                payload = json.dumps(chat_completion(body, usage=behaviour != "no-usage")).encode()
                self._send(200, payload, trickle_s=server.sleep_s if behaviour == "trickle" else 0.0)

        def _half_answer(self, kind: str, arg: str, body: dict[str, Any]) -> None:
            """Play one of ``HALF_ANSWERS`` (the class docstring)."""
            response = chat_completion(body)
            choice = response["choices"][0]
            if kind == "body":
                self._send(200, arg.encode())
                return
            if kind == "content":
                choice["finish_reason"] = "stop"  # a failed answer, not one cut off by the limit
            fields = {"logprobs": (choice, "logprobs"), "finish": (choice, "finish_reason"),
                      "usage": (response, "usage")}
            if kind in fields:
                target, key = fields[kind]
                target[key] = json.loads(arg)
            payload = json.dumps(response).encode()
            if kind == "content":  # spliced in as written, so an escape such as \ud83d reaches the client raw
                payload = payload.replace(json.dumps(choice["message"]["content"]).encode(), f'"{arg}"'.encode())
            if kind == "not-utf8":
                payload = payload.replace(b"echo: ", b"echo: caf\xe9 ")
            if kind == "gzip-broken":
                self._send(200, gzip.compress(payload)[:10] + b"not deflate data", {"Content-Encoding": "gzip"})
            elif kind == "cut":
                self._send(200, payload, cut=len(payload) // 2)
            else:
                self._send(200, payload)

        def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None,
                  trickle_s: float = 0.0, cut: int | None = None) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if cut is not None:  # the declared length, then half of it and the connection closed
                self.wfile.write(payload[:cut])
                self.wfile.flush()
                self.close_connection = True
                return
            for at in range(0, len(payload), 1 if trickle_s else len(payload)):  # bounded by the payload
                self.wfile.write(payload[at : at + (1 if trickle_s else len(payload))])
                time.sleep(trickle_s)

        def log_message(self, *args: Any) -> None:
            """Keep the test output clean."""

    return Handler


def backend(server: FakeOpenAI, **kw: Any) -> OpenAIBackend:
    options = {"timeout_s": 5.0, "max_retries": 3, "backoff_s": 0.01, **kw}
    return OpenAIBackend(model="fake-model", base_url=server.base_url, **options)


def req(content: str = "hi", **kw: Any) -> GenerationRequest:
    return GenerationRequest(messages=(Message("system", "be brief"), Message("user", content)), **kw)
