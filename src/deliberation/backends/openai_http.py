"""A backend for any OpenAI-compatible chat-completions server: vLLM, llama.cpp's server, Ollama, hosted APIs.

Requests of a batch run concurrently (at most ``max_in_flight`` at a time) on the async ``openai`` client.
The client's own retries are disabled so that one policy, ours, applies everywhere: timeouts, connection
errors, HTTP 408/429/5xx and malformed responses (a 200 whose message content is null or the empty string
included: it is never returned, so never cached as an empty answer) are retried. The wait before a retry is
the server's ``Retry-After`` (seconds or an HTTP date, at most ``MAX_RETRY_AFTER_S``) when it sends one,
else exponential backoff (``backoff_s * 2**attempt``). Each failed attempt that is retried logs a one-line
warning naming the server, the error and what to do. Time per request: each attempt may take
``timeout_s`` (connecting at most ``CONNECT_TIMEOUT_S``), and one request with all its retries and waits at
most ``total_timeout_s`` from when it is first sent (time waiting for an in-flight slot, before the first
attempt or a retry, does not count), so a server that never answers fails after ``total_timeout_s`` (3
minutes by default) with warnings on the way. An attempt's time covers the whole exchange, body included:
httpx's timeouts bound each read, so a server trickling its answer a byte at a time never trips them; a
deadline around the call cancels it (closing the connection) and the attempt fails as a timeout. Other 4xx
errors are the caller's mistake and fail at once. Either way the user gets a one-line
``DelibError`` naming the server, the last error and the fix.

With ``summaries=True`` every request asks for its tokens' log-probabilities (``top_logprobs`` 0 unless
the request wants alternatives), so every completion carries a log-probability summary
(``logprob_summary.from_pieces``), as the in-process llamacpp backend's do (the request's own ``logprobs``
are returned only when it asks for them). Servers report the raw logits' log-probabilities (llama.cpp's;
vLLM's V1 engine by default), as llamacpp records them. Off by default: cheap on vLLM's server, but
llama-cpp-python's server computes them in Python over the whole vocabulary (measured with SmolLM2-135M,
49k tokens: 377 greedy tokens in 19-20 s instead of 5.0 s). A completion whose request asked for logprobs
carries a summary either way.

Token counts come from the response's ``usage``. Some servers omit it; then the completion is counted as
the number of returned logprob entries when there are any, else estimated at ~4 characters per token
(OpenAI's rule of thumb for English text), and the prompt likewise from its characters. The estimate is
only a fallback for reporting; it is never used for anything that needs exact counts.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timezone
from typing import Any, Awaitable, Callable, Sequence, TypeVar

from deliberation.backends.base import PLAIN_SAMPLING, cache_scope
from deliberation.backends.logprob_summary import from_pieces, from_texts
from deliberation.errors import DelibError, install_hint, require_at_least
from deliberation.types import Completion, GenerationRequest, LogprobSummary, TokenLogprob

T = TypeVar("T")
SAMPLERS = {"plain": "softmax(logits / temperature), every other sampler off, as the other backends sample; "
                     "needs a server that takes top_k, min_p and repetition_penalty (llama.cpp's, vLLM's from 0.9)",
            "server": "the server's own defaults, for hosted APIs that refuse those fields and servers that "
                      "ignore them (Ollama)"}
"""``--backend-opt sampler=``: what the backend asks the server to sample with."""
OPENAI_FIELDS = ("top_p", "presence_penalty", "frequency_penalty")
"""The fields of ``PLAIN_SAMPLING`` the OpenAI API itself defines; the others go in the request's extra body."""
CHARS_PER_TOKEN = 4  # fallback estimate when the server sends no usage
MAX_RETRY_AFTER_S = 60.0  # longest wait a server's Retry-After gets
CONNECT_TIMEOUT_S = 10.0  # connecting to the server (a host that drops packets), within timeout_s
_RETRYABLE_STATUS = (408, 429)  # plus every 5xx
log = logging.getLogger(__name__)


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
    ``sampler``: plain (default) or server (``SAMPLERS``). ``summaries``: record every completion's
    log-probability summary (module docstring).
    ``timeout_s``: one attempt; ``max_retries``: attempts after the first; ``total_timeout_s``: one request,
    retries and waits included; ``backoff_s``: first wait without Retry-After (module docstring). On the
    command line each is ``--backend-opt NAME=VALUE``.
    """

    name = "openai"

    @staticmethod
    def records_summaries(summaries: bool = False, supports_logprobs: bool = True, **_: Any) -> bool:
        """With ``summaries=true``, from a server that returns log-probabilities."""
        return summaries and supports_logprobs

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key_env: str = "OPENAI_API_KEY",
        max_in_flight: int = 8,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        total_timeout_s: float = 180.0,
        backoff_s: float = 0.5,
        supports_logprobs: bool = True,
        sampler: str = "plain",
        summaries: bool = False,
    ) -> None:
        _check_options(max_in_flight, timeout_s, total_timeout_s, max_retries, backoff_s)
        if sampler not in SAMPLERS:
            choices = " or ".join(f"{k} ({v})" for k, v in SAMPLERS.items())
            raise DelibError(f"unknown sampler {sampler!r}; use {choices}")
        self._openai = import_openai()
        self.model = model
        self.base_url = base_url
        self.sampler = sampler
        self.summaries = summaries
        # One name, two servers: two models as far as the cache goes. Before the sampler was sent, every
        # request was made under the server's defaults: such caches are served to sampler=server only.
        self.cache_scope = cache_scope(f"{model} at {base_url}",
                                       **({"sampler": sampler} if sampler != "server" else {}))
        self.api_key_env = api_key_env
        self.max_in_flight = max_in_flight
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.total_timeout_s = total_timeout_s
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
        """Try up to ``1 + max_retries`` times within ``total_timeout_s``; waits happen outside the slot, and
        time waiting for a slot (the first or a retry's) does not count: ``origin`` moves on by it."""
        origin: float | None = None
        attempt = 0
        while True:  # until an attempt returns or _wait_before_retry says stop
            try:
                asked = time.perf_counter()
                async with slots:
                    got = time.perf_counter()
                    origin = got if origin is None else origin + (got - asked)
                    response = await self._attempt(client, request, self._time_left(origin))
                return completion_from_response(response, request, time.perf_counter() - origin)
            except (self._openai.APIError, json.JSONDecodeError, MalformedResponse) as err:
                self._raise_if_final(err)
                elapsed = time.perf_counter() - (origin or 0.0)
                wait = self._wait_before_retry(err, attempt, elapsed)
                if wait is None:
                    raise self._gave_up(err, attempt + 1, elapsed) from err
                log.warning(f"{self.base_url}: attempt {attempt + 1} of {self.max_retries + 1} failed "
                            f"({_describe(err)}); retrying in {wait:.1f} s; {self._advice(err)}")  # fmt: skip
                await asyncio.sleep(wait)
                attempt += 1

    def _time_left(self, start: float) -> float:
        """Seconds this attempt may take: ``timeout_s``, cut to what is left of ``total_timeout_s``."""
        return max(0.001, min(self.timeout_s, self.total_timeout_s - (time.perf_counter() - start)))

    async def _attempt(self, client: Any, request: GenerationRequest, seconds: float) -> Any:
        """One call that ends within ``seconds``, body included (module docstring); past the deadline it
        raises the ``APITimeoutError`` httpx's own timeouts give, so both read the same to the retry loop."""
        timeout = self._openai.Timeout(seconds, connect=min(CONNECT_TIMEOUT_S, seconds))
        try:
            async with asyncio.timeout(seconds):
                return await client.chat.completions.create(**self._body(request), timeout=timeout)
        except TimeoutError as err:
            import httpx  # installed with openai (the openai extra)

            sent = httpx.Request("POST", f"{self.base_url}/chat/completions")
            raise self._openai.APITimeoutError(request=sent) from err

    def _wait_before_retry(self, err: Exception, attempt: int, elapsed: float) -> float | None:
        """Seconds to wait before the next attempt, or None when no attempt or time is left."""
        asked = retry_after(err)
        wait = self.backoff_s * 2**attempt if asked is None else min(asked, MAX_RETRY_AFTER_S)
        if attempt >= self.max_retries or elapsed + wait >= self.total_timeout_s:
            return None
        return wait

    def _gave_up(self, err: Exception, attempts: int, elapsed: float) -> DelibError:
        asked = retry_after(err)
        waiting = "" if asked is None else f", asked to retry after {asked:.0f} s"
        return DelibError(
            f"no completion from {self.base_url} after {attempts} attempts in {elapsed:.0f} s "
            f"(last error: {_describe(err)}{waiting}); check that the server is running and serves model "
            f"{self.model!r}, or raise option timeout_s=N (now {self.timeout_s:g}), max_retries=N "
            f"(now {self.max_retries}) or total_timeout_s=N (now {self.total_timeout_s:g})"
        )

    def _advice(self, err: Exception) -> str:
        """What the user can do about a failed attempt, in a few words."""
        if isinstance(err, self._openai.APITimeoutError):
            return (f"no complete answer within timeout_s={self.timeout_s:g}: the server is stuck, busy or slow to "
                    "send it; check it, or raise option timeout_s=N or lower max_in_flight")  # fmt: skip
        if isinstance(err, self._openai.APIConnectionError):
            return "nothing answers there: start the server or fix option base_url"
        if getattr(err, "status_code", None) == 429:
            return "rate limited: lower option max_in_flight"
        return "if this repeats, check the server's log"

    def _raise_if_final(self, err: Exception) -> None:
        """Fail at once on a 4xx the server will repeat (bad request, auth, unknown model)."""
        status = getattr(err, "status_code", None)
        if isinstance(err, self._openai.APIStatusError) and 400 <= status < 500 and status not in _RETRYABLE_STATUS:
            raise DelibError(
                f"{self.base_url} rejected the request with HTTP {status} ({_describe(err)}); "
                f"check the model name {self.model!r}, the API key in ${self.api_key_env} and the request options"
                + (" (a server that refuses top_k, min_p or repetition_penalty: --backend-opt sampler=server)"
                   if self.sampler == "plain" and status in (400, 422) else "")
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
        if self.sampler == "plain":
            body.update({k: v for k, v in PLAIN_SAMPLING.items() if k in OPENAI_FIELDS})
            body["extra_body"] = {**{k: v for k, v in PLAIN_SAMPLING.items() if k not in OPENAI_FIELDS},
                                  "top_k": 0, "repeat_penalty": 1.0}  # llama.cpp's servers' names
        if request.stop:
            body["stop"] = list(request.stop)
        if self.supports_logprobs and (request.logprobs or self.summaries):  # top_logprobs always goes along:
            # llama-cpp-python's server returns no logprobs without it.
            body.update(logprobs=True, top_logprobs=request.top_logprobs if request.logprobs else 0)
        return body


# --- response mapping (pure) -----------------------------------------------------------------------


def completion_from_response(response: Any, request: GenerationRequest, latency_s: float) -> Completion:
    """Map an ``openai`` ChatCompletion to a Completion; MalformedResponse when it is not one."""
    choices = getattr(response, "choices", None)
    if not choices:
        raise MalformedResponse(f"response has no choices: {str(response)[:120]!r}")
    choice = choices[0]
    text = getattr(getattr(choice, "message", None), "content", None)
    reason = getattr(choice, "finish_reason", None)
    if not text and reason == "length":  # the limit hit before any content (a reasoning model): retrying repeats it
        raise DelibError("the server cut the answer off before any content (finish_reason length); raise max_tokens")
    if not text:  # null or "": e.g. a server that failed mid-answer: an error to retry, not an answer to cache
        content = "null" if text is None else "empty"
        raise MalformedResponse(f"the message content is {content} (finish_reason {reason})")
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    logprobs = _logprobs(content)
    prompt_tokens, completion_tokens = _token_counts(getattr(response, "usage", None), request, text, logprobs)
    return Completion(
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        logprobs=logprobs if request.logprobs else None,
        finish_reason=getattr(choice, "finish_reason", None) or "stop",
        latency_s=latency_s,
        summary=None if not content else _summary(content, text),
    )


def _logprobs(content: Any) -> tuple[TokenLogprob, ...] | None:
    """``choice.logprobs.content`` (token, logprob, top_logprobs) as TokenLogprob tuples."""
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


def _summary(content: Any, text: str) -> LogprobSummary | None:
    """The log-probability summary of ``choice.logprobs.content``: from the tokens' bytes where the server
    sends them (exact for a character split over tokens), else from their texts."""
    values = [float(item.logprob) for item in content]
    if all(getattr(item, "bytes", None) for item in content):
        return from_pieces(values, [bytes(item.bytes) for item in content], text)
    return from_texts(values, [item.token for item in content], text)


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


def retry_after(err: Exception) -> float | None:
    """Seconds the server asks to wait (``Retry-After``: seconds or an HTTP date), None when it does not say."""
    response = getattr(err, "response", None)
    value = (getattr(response, "headers", None) or {}).get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000" parses naive; HTTP dates are UTC (RFC 9110, section 5.6.7)
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - time.time())


def _describe(err: Exception | None) -> str:
    """One line naming the error type and its message (at most ~200 characters)."""
    words = " ".join(str(err).split())
    return f"{type(err).__name__}: {words[:200]}" if words else type(err).__name__


def _check_options(max_in_flight: int, timeout_s: float, total_timeout_s: float, max_retries: int,
                   backoff_s: float) -> None:
    require_at_least("max_in_flight", max_in_flight)
    if timeout_s <= 0 or total_timeout_s <= 0:
        raise DelibError(f"timeout_s and total_timeout_s must be positive, got {timeout_s} and {total_timeout_s}")
    if max_retries < 0 or backoff_s < 0:
        raise DelibError(f"max_retries and backoff_s must be >= 0, got {max_retries} and {backoff_s}")
