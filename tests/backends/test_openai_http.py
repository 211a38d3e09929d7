"""The OpenAI-compatible HTTP backend against a scripted fake server on 127.0.0.1 (tests/fake_openai.py):
request and response mapping, log-probabilities and their summaries, usage estimates, the bound on
requests in flight, a clear error when nothing listens, calls from a thread or a running event loop, and
option checks. Retries, Retry-After and timeouts: test_openai_http_retries.py."""

from __future__ import annotations

import asyncio
import sys
import threading

import pytest

from deliberation.backends import make_backend
from deliberation.backends.openai_http import OpenAIBackend
from deliberation.errors import DelibError

from fake_openai import backend, req


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


def test_max_in_flight_bounds_concurrency(serve) -> None:
    server = serve([], default="hold", hold_s=0.3)
    out = backend(server, max_in_flight=2).generate([req(str(i)) for i in range(6)])
    assert [c.text for c in out] == [f"echo: {i}" for i in range(6)]  # request order kept
    assert server.max_in_flight == 2


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
    with pytest.raises(DelibError, match=r"pip install -e '\.\[openai\]'"):
        OpenAIBackend("m", "http://x/v1")
