"""LLM backends behind one batch-first protocol, and the registry ``BACKENDS``.

Adding a backend is one file plus one line here. Heavy libraries are imported lazily inside each
backend, so importing this package is cheap.
"""

from __future__ import annotations

import inspect
from typing import Any

from deliberation.backends.base import Backend
from deliberation.errors import DelibError
from deliberation.registry import lookup

# name -> "module:Class"; resolved on use so no heavy import happens at registry time.
BACKENDS: dict[str, str] = {
    "llamacpp": "deliberation.backends.llamacpp:LlamaCppBackend",
    "openai": "deliberation.backends.openai_http:OpenAIBackend",
    "hf": "deliberation.backends.hf:HFBackend",
    "vllm": "deliberation.backends.vllm:VLLMBackend",
    "scripted": "deliberation.engine.scripted:ScriptedBackend",
}


def backend_class(name: str) -> type:
    """The class registered under ``name``."""
    return lookup(BACKENDS, name, "backend")


def make_backend(name: str, cache: str | None = None, **options: Any) -> Backend:
    """Build the backend ``name`` with ``options``; wrap it in the SQLite response cache at ``cache``."""
    cls = backend_class(name)
    _check_options(name, cls, options)
    backend = cls(**options)
    if cache is None:
        return backend
    from deliberation.backends.cache import CachedBackend

    return CachedBackend(backend, cache)


def _check_options(name: str, cls: type, options: dict[str, Any]) -> None:
    """Refuse an option the backend's constructor does not take, listing those it does."""
    params = inspect.signature(cls).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    unknown = sorted(set(options) - set(params))
    if unknown:
        raise DelibError(f"backend {name!r} takes no option {', '.join(unknown)}; its options: {', '.join(params)}")


__all__ = ["BACKENDS", "Backend", "backend_class", "make_backend"]
