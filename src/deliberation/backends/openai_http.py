"""A backend for any OpenAI-compatible chat-completions server: vLLM, llama.cpp's server, Ollama, hosted APIs.

Requests of a batch run concurrently (at most ``max_in_flight`` at a time) on the async ``openai`` client.
The client's own retries are disabled so that one policy, ours, applies everywhere: timeouts, connection
errors, HTTP 408/429/5xx and malformed responses are retried with exponential backoff
(``backoff_s * 2**attempt``); other 4xx errors are the caller's mistake and fail at once. Either way the
user gets a one-line ``DelibError`` naming the server, the last error and the fix.

Token counts come from the response's ``usage``. Some servers omit it; then the completion is counted as
the number of returned logprob entries when there are any, else estimated at ~4 characters per token
(OpenAI's rule of thumb for English text), and the prompt likewise from its characters. The estimate is
only a fallback for reporting; it is never used for anything that needs exact counts.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Awaitable, Callable, Sequence, TypeVar

from deliberation.errors import DelibError, install_hint, require_at_least
from deliberation.types import Completion, GenerationRequest, TokenLogprob

T = TypeVar("T")
CHARS_PER_TOKEN = 4  # fallback estimate when the server sends no usage
_RETRYABLE_STATUS = (408, 429)  # plus every 5xx


class MalformedResponse(Exception):
    """The server answered 2xx with something that is not a chat completion."""


def import_openai() -> Any:
    """The ``openai`` module, or a DelibError with the install hint."""
    try:
        import openai
    except ImportError as err:
        raise DelibError(install_hint("openai", "openai")) from err
    return openai


def run_sync(factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from synchronous code: in this thread when no event loop is
    running here (also in worker threads), else on a fresh loop in a helper thread (e.g. in Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())  # type: ignore[arg-type]
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()  # type: ignore[arg-type]


class OpenAIBackend:
    """Chat completions over HTTP from an OpenAI-compatible server at ``base_url``.

    ``api_key_env`` names the environment variable holding the key; local servers need none (the
    placeholder ``"EMPTY"`` is sent). ``supports_logprobs=False`` for servers that reject logprobs.
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key_env: str = "OPENAI_API_KEY",
        max_in_flight: int = 8,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        supports_logprobs: bool = True,
    ) -> None:
        _check_options(max_in_flight, timeout_s, max_retries, backoff_s)
        self._openai = import_openai()
        self.model = model
        self.base_url = base_url
        self.cache_scope = f"{model} at {base_url}"  # one name, two servers: two models as far as the cache goes
        self.api_key_env = api_key_env
        self.max_in_flight = max_in_flight
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.supports_logprobs = supports_logprobs

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """One Completion per request, in order; the requests run concurrently."""
        if not requests:
            return []
        return run_sync(lambda: self._generate_all(list(requests)))

    def close(self) -> None:
        """Nothing to release: each ``generate`` opens and closes its own HTTP client."""

    # --- async internals ---------------------------------------------------------------------------

    async def _generate_all(self, requests: list[GenerationRequest]) -> list[Completion]:
        # A fresh client per batch: httpx clients are bound to the event loop that created them.
        api_key = os.environ.get(self.api_key_env) or "EMPTY"
        client = self._openai.AsyncOpenAI(
            api_key=api_key, base_url=self.base_url, timeout=self.timeout_s, max_retries=0
        )
        slots = asyncio.Semaphore(self.max_in_flight)
        async with client:
            tasks = [self._with_retries(client, slots, r) for r in requests]
            return list(await asyncio.gather(*tasks))

    async def _with_retries(self, client: Any, slots: asyncio.Semaphore, request: GenerationRequest) -> Completion:
        """Try up to ``1 + max_retries`` times; the backoff sleep happens outside the in-flight slot."""
        start = time.perf_counter()
        last: Exception | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                await asyncio.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                async with slots:
                    response = await client.chat.completions.create(**self._body(request))
                return completion_from_response(response, request, time.perf_counter() - start)
            except (self._openai.APIError, json.JSONDecodeError, MalformedResponse) as err:
                self._raise_if_final(err)
                last = err
        raise DelibError(
            f"no completion from {self.base_url} after {self.max_retries + 1} attempts "
            f"(last error: {_describe(last)}); check that the server is running and serves model "
            f"{self.model!r}, or raise timeout_s / max_retries"
        ) from last

    def _raise_if_final(self, err: Exception) -> None:
        """Fail at once on a 4xx the server will repeat (bad request, auth, unknown model)."""
        status = getattr(err, "status_code", None)
        if isinstance(err, self._openai.APIStatusError) and 400 <= status < 500 and status not in _RETRYABLE_STATUS:
            raise DelibError(
                f"{self.base_url} rejected the request with HTTP {status} ({_describe(err)}); "
                f"check the model name {self.model!r}, the API key in ${self.api_key_env} and the request options"
            ) from err

    def _body(self, request: GenerationRequest) -> dict[str, Any]:
        """Keyword arguments of ``chat.completions.create`` for ``request``."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "seed": request.seed,
        }
        if request.stop:
            body["stop"] = list(request.stop)
        if request.logprobs and self.supports_logprobs:
            # top_logprobs always goes along: llama-cpp-python's server returns no logprobs without it.
            body.update(logprobs=True, top_logprobs=request.top_logprobs)
        return body


# --- response mapping (pure) -----------------------------------------------------------------------


def completion_from_response(response: Any, request: GenerationRequest, latency_s: float) -> Completion:
    """Map an ``openai`` ChatCompletion to a Completion; MalformedResponse when it is not one."""
    choices = getattr(response, "choices", None)
    if not choices:
        raise MalformedResponse(f"response has no choices: {str(response)[:120]!r}")
    choice = choices[0]
    message = getattr(choice, "message", None)
    text = getattr(message, "content", None) or ""
    logprobs = _logprobs(getattr(choice, "logprobs", None))
    prompt_tokens, completion_tokens = _token_counts(getattr(response, "usage", None), request, text, logprobs)
    return Completion(
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        logprobs=logprobs,
        finish_reason=getattr(choice, "finish_reason", None) or "stop",
        latency_s=latency_s,
    )


def _logprobs(choice_logprobs: Any) -> tuple[TokenLogprob, ...] | None:
    """``choice.logprobs.content`` (token, logprob, top_logprobs) as TokenLogprob tuples."""
    content = getattr(choice_logprobs, "content", None)
    if content is None:
        return None
    return tuple(
        TokenLogprob(
            token=item.token,
            logprob=float(item.logprob),
            top=tuple((alt.token, float(alt.logprob)) for alt in (item.top_logprobs or ())),
        )
        for item in content
    )


def _token_counts(
    usage: Any, request: GenerationRequest, text: str, logprobs: tuple[TokenLogprob, ...] | None
) -> tuple[int, int]:
    """(prompt, completion) tokens from ``usage``, else the fallback described in the module docstring."""
    prompt = getattr(usage, "prompt_tokens", None)
    completion = getattr(usage, "completion_tokens", None)
    if prompt is None:
        prompt = _estimate_tokens(sum(len(m.content) for m in request.messages))
    if completion is None:
        completion = len(logprobs) if logprobs else _estimate_tokens(len(text))
    return int(prompt), int(completion)


def _estimate_tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)  # ceiling division


def _describe(err: Exception | None) -> str:
    """One line naming the error type and its message (at most ~200 characters)."""
    words = " ".join(str(err).split())
    return f"{type(err).__name__}: {words[:200]}" if words else type(err).__name__


def _check_options(max_in_flight: int, timeout_s: float, max_retries: int, backoff_s: float) -> None:
    require_at_least("max_in_flight", max_in_flight)
    if timeout_s <= 0:
        raise DelibError(f"timeout_s must be positive, got {timeout_s}")
    if max_retries < 0 or backoff_s < 0:
        raise DelibError(f"max_retries and backoff_s must be >= 0, got {max_retries} and {backoff_s}")
