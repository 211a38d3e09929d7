"""The Backend protocol every LLM backend implements (docs/design.md, section Backends): the members every
backend has, and the optional ones, each with its default here and nowhere else.

Batch-first: ``generate`` takes all requests of a round at once so backends that can decode several
sequences together (llama.cpp batches, vLLM, concurrent HTTP) do so.

Adding a backend is a class with the required members (``Backend``) and one line in ``backends.BACKENDS``.
An optional member it defines replaces the default: a class's (``Capabilities``: answered from the options
the backend would be built with, before anything loads) and an instance's (``cache_scope`` and
``interrupt``, read through ``cache_scope_of`` and ``interrupt``). ``check_class`` and ``check_backend``
name what a class or a built backend lacks.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from deliberation.types import Completion, GenerationRequest


@runtime_checkable
class Backend(Protocol):
    """An LLM that turns requests into completions, one completion per request, in order.

    Optional instance members (defaults in ``cache_scope_of`` and ``interrupt``):
    - ``cache_scope: str``: what the response cache key names as the model; default ``model``. A backend
      whose model name does not pin the weights or the output-changing settings names them here (an HTTP
      server serves whatever it loaded under any name: ``model at base_url``; ``cache_scope()`` below);
    - ``interrupt() -> None``: stop the running and later ``generate`` calls with ``errors.Interrupted``;
      default: nothing, the calls run to their end.
    """

    name: str  # registry name, e.g. "llamacpp"
    model: str  # model identity; part of the response-cache key
    supports_logprobs: bool  # whether Completion.logprobs (with top alternatives) is filled in

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Return one Completion per request, in the same order."""
        ...

    def close(self) -> None:
        """Release models, servers, connections."""
        ...


SPEED_OPTIONS = frozenset({"n_threads", "verbose", "max_in_flight", "timeout_s", "total_timeout_s", "max_retries",
                           "backoff_s"})
"""Backend options that change how fast or how patiently requests are served, never what a request returns
(llama.cpp's threads and log; the HTTP backend's concurrency, timeouts and retries): a run, a graph or a
workflow resumes under other values of them, so that a run stopped by a slow server resumes with the longer
timeout its message asks for. Any other option is a setting of the output."""
REQUIRED_ATTRIBUTES: dict[str, type] = {"name": str, "model": str, "supports_logprobs": bool}
REQUIRED_METHODS = ("generate", "close")


def _accepts(*_: Any, **__: Any) -> None:
    """The default check: nothing to refuse."""


def _unknown(**_: Any) -> None:
    """The default answer of a class hook: not known before the backend loads."""


def _none(**_: Any) -> bool:
    """The default answer of a yes-or-no class hook: no."""
    return False


@dataclass(frozen=True)
class Capabilities:
    """A backend class's optional members, each the class's own or the default below. Each is asked before
    anything is built, so a bad run is refused before a model loads."""

    caches_itself: bool = False
    """True: ``make_backend`` passes the response cache path as the constructor's ``cache`` instead of
    wrapping the backend in one (a team: each member keys its own scope)."""
    validate_options: Callable[..., None] = _accepts
    """``validate_options(**options)``: raise a DelibError for options the constructor's signature lets
    through but the backend cannot take (a team checks every member); default: accept them."""
    context_window: Callable[..., int | None] = _unknown
    """``context_window(**options)``: the tokens one sequence may hold (llamacpp's ``n_ctx``); default None:
    the server or the model decides."""
    team_size: Callable[..., int | None] = _unknown
    """``team_size(**options)``: the agents the backend has a model for (a team: one per agent); default
    None: it serves any number of agents."""
    check_model: Callable[[str], None] = _accepts
    """``check_model(model)``: raise a DelibError for a model the backend cannot load, without loading it
    (llamacpp: a catalogue name or an existing file); asked of a team's members; default: accept it."""
    records_summaries: Callable[..., bool] = _none
    """``records_summaries(**options)``: whether every completion it makes carries a log-probability summary
    (``types.LogprobSummary``), which some methods read (``runs/runner.check_summaries``); default: no."""


def capabilities(cls: type) -> Capabilities:
    """``cls``'s optional class members over their defaults; a TypeError names one of the wrong kind."""
    found = {f.name: getattr(cls, f.name) for f in dataclasses.fields(Capabilities) if hasattr(cls, f.name)}
    wrong = sorted(name for name, value in found.items()
                   if not (isinstance(value, bool) if name == "caches_itself" else callable(value)))
    if wrong:
        raise TypeError(f"backend class {cls.__qualname__}: {', '.join(wrong)} is not what backends.base."
                        "Capabilities documents (caches_itself: True or False; the others: static methods)")
    return Capabilities(**found)


def check_class(cls: type, name: str) -> type:
    """``cls`` if it can be the backend ``name``: it has the required methods and its optional class
    members are of their kinds (``capabilities``); else a TypeError naming what it lacks."""
    lacking = [f"{method}()" for method in REQUIRED_METHODS if not callable(getattr(cls, method, None))]
    if lacking:
        raise TypeError(f"backend {name!r} ({cls.__module__}:{cls.__qualname__}) lacks {' and '.join(lacking)}; "
                        "a backend has the members of backends.base.Backend")
    capabilities(cls)
    return cls


def check_backend(backend: Any, name: str) -> Backend:
    """``backend`` if it has the required attributes, of their types (and a ``cache_scope``, when it has one, is
    text); else a TypeError naming what it lacks."""
    members = {attribute: getattr(backend, attribute, None) for attribute in (*REQUIRED_ATTRIBUTES, "cache_scope")}
    wrong = [f"{attribute} ({kind.__name__})" for attribute, kind in REQUIRED_ATTRIBUTES.items()
             if not isinstance(members[attribute], kind)]
    if members["cache_scope"] is not None and not isinstance(members["cache_scope"], str):
        wrong.append("cache_scope (str, when it has one)")
    if wrong:
        raise TypeError(f"backend {name!r} ({type(backend).__qualname__}) lacks {', '.join(wrong)}; "
                        "a backend has the members of backends.base.Backend")
    return backend


def cache_scope_of(backend: Backend) -> str:
    """What the response cache key names as ``backend``'s model: its ``cache_scope``, by default its model."""
    scope = getattr(backend, "cache_scope", None)
    return backend.model if scope is None else scope


def interrupt(backend: Backend) -> None:
    """Ask ``backend`` to stop its running and later ``generate`` calls with ``errors.Interrupted``, for
    backends that can (an optional ``interrupt()`` method: llamacpp stops at its next decode step; the
    cache and the coalescer pass it on); by default nothing happens. The backend stays interrupted, as a closed
    one stays closed. Why: on Ctrl-C with several questions in flight, the worker threads would otherwise
    finish their whole current calls (minutes of decoding) before the process can exit."""
    stop = getattr(backend, "interrupt", None)
    if stop is not None:
        stop()


PLAIN_SAMPLING = {"top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0, "presence_penalty": 0.0,
                  "frequency_penalty": 0.0}
"""Every sampler but temperature switched off, under vLLM's names (top-k is left to each backend: vLLM's
server before 0.9 refuses 0, llama-cpp-python's server refuses -1). Every backend samples plainly from
softmax(logits / temperature), as llamacpp does, so one method on two backends samples one distribution;
servers and model folders otherwise add their own defaults (llama-cpp-python's server: top_k 40, top_p 0.95,
min_p 0.05, repeat_penalty 1.1; vLLM's server, for what a request leaves out, and transformers' generate: the
model's generation_config.json, Qwen2.5's repetition_penalty 1.1, top_k 20, top_p 0.8). vLLM's offline engine
applies none of it to the sampling parameters it is given; the vllm backend sets them all anyway."""


def cache_scope(model: str, **changed: object) -> str:
    """The ``cache_scope`` of a backend of ``model`` with its output-changing settings that are not at their
    defaults (callers pass only those), e.g. ``qwen (n_ctx=2048)``. Defaults add nothing, so caches written
    before a setting was keyed stay valid for runs at the default."""
    extra = ", ".join(f"{k}={v}" for k, v in sorted(changed.items()))
    return f"{model} ({extra})" if extra else model
