"""LLM backends behind one batch-first protocol, and the registry ``BACKENDS``.

Adding a backend is one file plus one line here. Heavy libraries are imported lazily inside each
backend, so importing this package is cheap.
"""

from __future__ import annotations

from typing import Any

from deliberation.backends.base import Backend
from deliberation.registry import lookup

# name -> "module:Class"; resolved on use so no heavy import happens at registry time.
BACKENDS: dict[str, str] = {
    "llamacpp": "deliberation.backends.llamacpp:LlamaCppBackend",
    "openai": "deliberation.backends.openai_http:OpenAIBackend",
    "hf": "deliberation.backends.hf:HFBackend",
    "vllm": "deliberation.backends.vllm:VLLMBackend",
    "scripted": "deliberation.backends.scripted:ScriptedBackend",
}


def backend_class(name: str) -> type:
    """The class registered under ``name``."""
    return lookup(BACKENDS, name, "backend")


def make_backend(name: str, cache: str | None = None, **options: Any) -> Backend:
    """Build the backend ``name`` with ``options``; wrap it in the SQLite response cache at ``cache``."""
    backend = backend_class(name)(**options)
    if cache is None:
        return backend
    from deliberation.backends.cache import CachedBackend

    return CachedBackend(backend, cache)


__all__ = ["BACKENDS", "Backend", "backend_class", "make_backend"]
