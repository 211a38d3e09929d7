"""The Backend protocol every LLM backend implements (DESIGN.md section 2).

Batch-first: ``generate`` takes all requests of a round at once so backends that can decode several
sequences together (llama.cpp batches, vLLM, concurrent HTTP) do so.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from deliberation.types import Completion, GenerationRequest


@runtime_checkable
class Backend(Protocol):
    """An LLM that turns requests into completions, one completion per request, in order."""

    name: str  # registry name, e.g. "llamacpp"
    model: str  # model identity; part of the response-cache key
    supports_logprobs: bool  # whether Completion.logprobs (with top alternatives) is filled in

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Return one Completion per request, in the same order."""
        ...

    def close(self) -> None:
        """Release models, servers, connections."""
        ...


def interrupt(backend: Backend) -> None:
    """Ask ``backend`` to stop its running and later ``generate`` calls with ``errors.Interrupted``, for
    backends that can (an optional ``interrupt()`` method: llamacpp stops at its next decode step; the
    cache and the coalescer pass it on). The backend stays interrupted, as a closed one stays closed. Why: on
    Ctrl-C with several questions in flight, the worker threads would otherwise finish their whole current
    calls (minutes of decoding) before the process can exit."""
    stop = getattr(backend, "interrupt", None)
    if stop is not None:
        stop()


def cache_scope(model: str, **changed: object) -> str:
    """What the response cache names as the model: ``model`` plus every output-changing setting that is not
    at its default (callers pass only those), e.g. ``qwen (n_ctx=2048)``. Defaults add nothing, so caches
    written before a setting was keyed stay valid for runs at the default."""
    extra = ", ".join(f"{k}={v}" for k, v in sorted(changed.items()))
    return f"{model} ({extra})" if extra else model
