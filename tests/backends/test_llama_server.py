"""The OpenAI backend against a real OpenAI-compatible server: llama-cpp-python's bundled server
running SmolLM2-135M on 127.0.0.1 (started here, stopped in the fixture's teardown)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

from deliberation.backends import make_backend
from deliberation.types import GenerationRequest, Message

pytestmark = pytest.mark.integration
STARTUP_S = 120.0  # loading a 93 MB model takes seconds; the bound only guards against a hang
# Two llama.cpp runs of one model agree on greedy tokens but not to the last bit on their log-probabilities:
# the server evaluates prompt and steps in other batch shapes than the in-process backend, so its logits
# differ by the build's rounding. Measured on the three answers below (2026-11-28, an AVX2 build): at most
# 0.15 nats per token, both signs, the same on a rerun. A server that reported its samplers' probabilities
# instead of the raw logits' (1, log 0, for every greedy token) would be off by whole log-probabilities.
LOGPROB_NOISE = 0.3


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_ready(server: subprocess.Popen, base_url: str, log: Path) -> None:
    """Poll ``/v1/models`` until it answers; fail with the server log if it dies or never answers."""
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"llama_cpp.server exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    pytest.fail(f"llama_cpp.server did not answer within {STARTUP_S:.0f} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def llama_server(smollm2_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a running ``python -m llama_cpp.server`` on a free port."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    args = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_path),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
    ]  # fmt: skip
    with log.open("w") as sink:
        server = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT)
    try:
        wait_until_ready(server, base_url, log)
        yield base_url
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=15)


def ask(content: str, **kw) -> GenerationRequest:
    return GenerationRequest(messages=(Message("user", content),), **{"max_tokens": 24, "temperature": 0.0, **kw})


def test_real_completion_with_token_counts(llama_server: str, smollm2_path: Path) -> None:
    backend = make_backend("openai", model=smollm2_path.name, base_url=llama_server, timeout_s=120.0)
    out = backend.generate([ask("What is 2 + 3? Answer briefly.")])[0]
    assert out.text.strip(), "the server returned an empty completion"
    assert out.prompt_tokens > 5 and 0 < out.completion_tokens <= 24
    assert out.finish_reason in ("stop", "length") and out.latency_s > 0


def test_real_logprobs_with_top_alternatives(llama_server: str, smollm2_path: Path) -> None:
    backend = make_backend("openai", model=smollm2_path.name, base_url=llama_server, timeout_s=120.0)
    out = backend.generate([ask("Is the sky blue? Answer Yes or No.", logprobs=True, top_logprobs=3)])[0]
    assert out.logprobs, "logprobs were requested but none came back"
    assert len(out.logprobs) == out.completion_tokens
    first = out.logprobs[0]
    assert first.logprob <= 0.0 and len(first.top) == 3
    assert all(lp <= 0.0 for _, lp in first.top)
    assert first.token in [t for t, _ in first.top]  # greedy: the chosen token is among the top


def test_batch_of_requests_keeps_order(llama_server: str, smollm2_path: Path) -> None:
    backend = make_backend("openai", model=smollm2_path.name, base_url=llama_server, timeout_s=120.0)
    requests = [ask("Say the word apple."), ask("Say the word banana.")]
    batched = backend.generate(requests)
    alone = [backend.generate([r])[0] for r in requests]
    assert [c.text for c in batched] == [c.text for c in alone]  # greedy, so repeatable per request


def test_plain_greedy_answers_equal_the_in_process_backend(llama_server: str, smollm2_path: Path) -> None:
    """One model, two backends, one distribution: with the server's own samplers switched off (top_k 40,
    min_p 0.05, repeat_penalty 1.1 by default) its greedy answers are the in-process llamacpp backend's. With
    the server's defaults they are not (the repeat penalty reshapes a 135M model's greedy text): the first
    check can fail."""
    prompts = ["List the first ten prime numbers.", "Write the word hello five times.", "Count from 1 to 20."]
    requests = [ask(p, max_tokens=48) for p in prompts]
    local = make_backend("llamacpp", model=str(smollm2_path), n_ctx=1024, max_parallel=1)
    try:
        expected = [local.generate([r])[0] for r in requests]
    finally:
        local.close()
    plain = make_backend("openai", model=smollm2_path.name, base_url=llama_server, timeout_s=120.0, summaries=True)
    server = make_backend("openai", model=smollm2_path.name, base_url=llama_server, timeout_s=120.0,
                          sampler="server")
    got = [plain.generate([r])[0] for r in requests]
    assert [c.text for c in got] == [c.text for c in expected]
    assert [server.generate([r])[0].text for r in requests] != [c.text for c in expected]
    # The log-probability summaries agree too, to the rounding of the build (LOGPROB_NOISE): the server
    # reports the raw logits' log-probabilities.
    for mine, theirs in zip(got, expected):
        assert mine.summary.tail_bounds == theirs.summary.tail_bounds
        assert mine.summary.tail == pytest.approx(theirs.summary.tail, abs=LOGPROB_NOISE)
        assert mine.summary.mean == pytest.approx(theirs.summary.mean, abs=LOGPROB_NOISE / 2)
    assert min(min(c.summary.tail) for c in expected) < -2 * LOGPROB_NOISE  # so reporting log 1 = 0 would fail
