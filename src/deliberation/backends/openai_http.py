"""A backend for any OpenAI-compatible chat-completions server: vLLM, llama.cpp's server, Ollama, hosted APIs.

Requests of a batch run concurrently (at most ``max_in_flight`` at a time) on the async ``openai`` client.
The client's own retries are disabled so that one policy, ours, applies everywhere: timeouts, connection
errors (nothing listening, a body cut short, a body that does not decode), HTTP 408/429/5xx and malformed
responses (a body that is not UTF-8 JSON, a 200 with no usable content: ``openai_response``, so nothing
empty is returned or cached) are retried. The wait before a retry is exponential backoff (``backoff_s *
2**attempt``), lengthened to the server's ``Retry-After`` (seconds or an HTTP date, at most
``MAX_RETRY_AFTER_S``) when it asks for more: a Retry-After of zero, in the past, negative or not a number
never shortens it, so a server cannot make the retries spin. Each failed attempt that is retried logs a
one-line warning naming the server, the fault (what went wrong, in words: ``_advice``) and what to do.
Time per request: each attempt may take ``timeout_s`` (connecting at most ``CONNECT_TIMEOUT_S``), and one
request with all its retries and waits at
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
carries a summary either way. How a response becomes a Completion, and what each malformed field gets:
``openai_response``.
"""

from __future__ import annotations

import asyncio
import email.utils
import inspect
import json
import logging
import math
import os
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from datetime import timezone
from typing import Any, Awaitable, Callable, Sequence, TypeVar

from deliberation.backends.base import PLAIN_SAMPLING, cache_scope
from deliberation.backends.openai_response import MalformedResponse, completion_from_response
from deliberation.errors import DelibError, install_hint, require_at_least
from deliberation.types import Completion, GenerationRequest

T = TypeVar("T")
SAMPLERS = {"plain": "softmax(logits / temperature), every other sampler off, as the other backends sample; "
                     "needs a server that takes top_k, min_p and repetition_penalty (llama.cpp's, vLLM's from 0.9)",
            "server": "the server's own defaults, for hosted APIs that refuse those fields and servers that "
                      "ignore them (Ollama)"}
"""``--backend-opt sampler=``: what the backend asks the server to sample with."""
OPENAI_FIELDS = ("top_p", "presence_penalty", "frequency_penalty")
"""The fields of ``PLAIN_SAMPLING`` the OpenAI API itself defines; the others go in the request's extra body."""
MAX_RETRY_AFTER_S = 60.0  # longest wait a server's Retry-After gets
CONNECT_TIMEOUT_S = 10.0  # connecting to the server (a host that drops packets), within timeout_s
_RETRYABLE_STATUS = (408, 429)  # plus every 5xx
log = logging.getLogger(__name__)


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
    def validate_options(**options: Any) -> None:
        """Refuse what the signature lets through (``backends.check_options``, before anything is written): a
        base URL that is not http(s) with a host, an empty key variable's name, counts and times out of range,
        an unknown sampler. Options not given are checked at their defaults."""
        given = inspect.signature(OpenAIBackend).bind_partial(**options)
        given.apply_defaults()
        _check_options(**{k: v for k, v in given.arguments.items() if k in _CHECKED})

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
        self.validate_options(base_url=base_url, api_key_env=api_key_env, max_in_flight=max_in_flight,
                              timeout_s=timeout_s, max_retries=max_retries, total_timeout_s=total_timeout_s,
                              backoff_s=backoff_s, sampler=sampler)
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
        # The clock the retry windows are measured on and the wait before a retry: the real ones, replaced
        # by tests so that a retry schedule is checked in exact numbers without waiting for it.
        self.clock: Callable[[], float] = time.perf_counter
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

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
                asked = self.clock()
                async with slots:
                    got = self.clock()
                    origin = got if origin is None else origin + (got - asked)
                    response = await self._attempt(client, request, self._time_left(origin))
                return completion_from_response(response, request, self.clock() - origin,
                                                self._asks_logprobs(request))
            except (self._openai.APIError, json.JSONDecodeError, MalformedResponse) as err:
                self._raise_if_final(err)
                elapsed = self.clock() - (origin or 0.0)
                wait = self._wait_before_retry(err, attempt, elapsed)
                if wait is None:
                    raise self._gave_up(err, attempt + 1, elapsed) from err
                log.warning(f"{self.base_url}: attempt {attempt + 1} of {self.max_retries + 1} failed "
                            f"({_describe(err)}); retrying in {wait:.1f} s; {self._advice(err)}")  # fmt: skip
                await self.sleep(wait)
                attempt += 1

    def _time_left(self, start: float) -> float:
        """Seconds this attempt may take: ``timeout_s``, cut to what is left of ``total_timeout_s``."""
        return max(0.001, min(self.timeout_s, self.total_timeout_s - (self.clock() - start)))

    async def _attempt(self, client: Any, request: GenerationRequest, seconds: float) -> Any:
        """One call that ends within ``seconds``, body included (module docstring); past the deadline it
        raises the ``APITimeoutError`` httpx's own timeouts give, so both read the same to the retry loop."""
        timeout = self._openai.Timeout(seconds, connect=min(CONNECT_TIMEOUT_S, seconds))
        try:
            async with asyncio.timeout(seconds):
                return await client.chat.completions.create(**self._body(request), timeout=timeout)
        except UnicodeDecodeError as err:  # the body is not UTF-8 (httpx decodes it before parsing the JSON)
            raise MalformedResponse(f"the answer is not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset "
                                    f"{err.start})") from err
        except TimeoutError as err:
            import httpx  # installed with openai (the openai extra)

            sent = httpx.Request("POST", f"{self.base_url}/chat/completions")
            raise self._openai.APITimeoutError(request=sent) from err

    def _wait_before_retry(self, err: Exception, attempt: int, elapsed: float) -> float | None:
        """Seconds to wait before the next attempt (the backoff, or the server's longer Retry-After: module
        docstring), or None when no attempt or time is left."""
        asked = retry_after(err)
        wait = max(self.backoff_s * 2**attempt, min(asked or 0.0, MAX_RETRY_AFTER_S))
        if attempt >= self.max_retries or elapsed + wait >= self.total_timeout_s:
            return None
        return wait

    def _gave_up(self, err: Exception, attempts: int, elapsed: float) -> DelibError:
        asked = retry_after(err)
        waiting = "" if asked is None else f", asked to retry after {asked:.0f} s"
        return DelibError(
            f"no completion from {self.base_url} after {attempts} attempts in {elapsed:.0f} s "
            f"(last error: {_describe(err)}{waiting}); {self._advice(err)}; or raise option max_retries=N "
            f"(now {self.max_retries}) or total_timeout_s=N (now {self.total_timeout_s:g})"
        )

    def _advice(self, err: Exception) -> str:
        """What went wrong with a failed attempt and what the user can do about it, in a few words."""
        if isinstance(err, self._openai.APITimeoutError):
            return (f"no complete answer within timeout_s={self.timeout_s:g}: the server is stuck, busy or slow to "
                    "send it; check it, or raise option timeout_s=N or lower max_in_flight")  # fmt: skip
        if isinstance(err, self._openai.APIConnectionError):
            return _connection_fault(err.__cause__)
        if getattr(err, "status_code", None) == 429:
            return "rate limited: lower option max_in_flight"
        if isinstance(err, (MalformedResponse, json.JSONDecodeError)):
            return (f"the server answers, but not with a usable chat completion: check its log, and that it serves "
                    f"model {self.model!r} through the OpenAI chat API")
        return f"the server failed: check its log, and that it serves model {self.model!r}"

    def _asks_logprobs(self, request: GenerationRequest) -> bool:
        """Whether the request sent for ``request`` asks for log-probabilities (``_body``)."""
        return self.supports_logprobs and (request.logprobs or self.summaries)

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
        if self._asks_logprobs(request):  # top_logprobs always goes along:
            # llama-cpp-python's server returns no logprobs without it.
            body.update(logprobs=True, top_logprobs=request.top_logprobs if request.logprobs else 0)
        return body


# --- faults: waits and words ------------------------------------------------------------------------


def retry_after(err: Exception, now: Callable[[], float] = time.time) -> float | None:
    """Seconds the server asks to wait (``Retry-After``: seconds or an HTTP date, counted from ``now``), None
    when it does not say."""
    response = getattr(err, "response", None)
    value = (getattr(response, "headers", None) or {}).get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = None
    if seconds is not None:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000" parses naive; HTTP dates are UTC (RFC 9110, section 5.6.7)
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - now())


def _kinds(err: BaseException | None) -> set[str]:
    """The names of the classes ``err`` is an instance of: the errors of the HTTP library under the openai
    client (httpx, or httpx2 in openai 3) are told apart by name, whichever library it is."""
    return {c.__name__ for c in type(err).__mro__} if err is not None else set()


def _connection_fault(cause: BaseException | None) -> str:
    """What a connection error was, from the HTTP library's error under it: nothing listening is not a body cut
    short, nor one that does not decode."""
    kinds = _kinds(cause)
    if cause is None or kinds & {"ConnectError", "ConnectTimeout"}:
        return "nothing answers there: start the server or fix option base_url"
    if "RemoteProtocolError" in kinds:
        return ("the server closed the connection before its whole answer arrived (the body cut short: it crashed "
                "or restarted, or a proxy cut it); check the server's log")
    if "DecodingError" in kinds:
        return ("the answer's body does not decode (a broken gzip or other compressed body); check the server, "
                "or a proxy between it and you")
    return "the connection broke during the exchange; check the server's log and the network"


def _describe(err: BaseException | None) -> str:
    """One line naming the error type and its message (at most ~200 characters), and for a connection error
    the error under it (what the HTTP library saw)."""
    words = " ".join(str(err).split())
    described = f"{type(err).__name__}: {words[:200]}" if words else type(err).__name__
    cause = getattr(err, "__cause__", None)
    if "RequestError" in _kinds(cause) and "TimeoutException" not in _kinds(cause):
        return f"{described} ({_describe(cause)})"
    return described


_CHECKED = ("base_url", "api_key_env", "max_in_flight", "timeout_s", "total_timeout_s", "max_retries", "backoff_s",
            "sampler")


def _check_options(*, base_url: str | None = None, api_key_env: str, max_in_flight: int, timeout_s: float,
                   total_timeout_s: float, max_retries: int, backoff_s: float, sampler: str) -> None:
    if base_url is not None:  # required: its absence is named by ``backends.check_options``
        try:
            parts = urllib.parse.urlsplit(base_url.strip())
            host = parts.hostname
        except ValueError:  # a malformed IPv6 address, http://[::1/v1
            host = None
        if host is None or parts.scheme not in ("http", "https"):
            raise DelibError(f"--base-url {base_url!r} is not an http(s) URL with a host; pass the server's "
                             "address, e.g. http://localhost:8000/v1")
    if not api_key_env.strip():
        raise DelibError("option api_key_env is empty; name the environment variable holding the key, or leave it "
                         "out (a local server needs none)")
    if sampler not in SAMPLERS:
        choices = " or ".join(f"{k} ({v})" for k, v in SAMPLERS.items())
        raise DelibError(f"unknown sampler {sampler!r}; use {choices}")
    require_at_least("max_in_flight", max_in_flight)
    if timeout_s <= 0 or total_timeout_s <= 0:
        raise DelibError(f"timeout_s and total_timeout_s must be positive, got {timeout_s} and {total_timeout_s}")
    if max_retries < 0 or backoff_s < 0:
        raise DelibError(f"max_retries and backoff_s must be >= 0, got {max_retries} and {backoff_s}")
