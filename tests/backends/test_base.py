"""The helpers beside the Backend protocol: interrupting a backend and the response-cache scope."""

from __future__ import annotations

from deliberation.backends.base import cache_scope, interrupt


class _Stoppable:
    def __init__(self) -> None:
        self.stops = 0

    def interrupt(self) -> None:
        self.stops += 1


def test_interrupt_calls_the_backends_own_interrupt_once() -> None:
    backend = _Stoppable()
    interrupt(backend)
    assert backend.stops == 1


def test_interrupt_leaves_a_backend_that_cannot_stop_alone() -> None:
    """A backend without interrupt() (e.g. a remote server) is left to finish its calls: no error."""
    interrupt(object())


def test_cache_scope_names_only_the_settings_off_their_defaults() -> None:
    assert cache_scope("qwen") == "qwen"  # at the defaults: the plain model name, as caches before scopes
    assert cache_scope("qwen", n_ctx=2048, dtype="bfloat16") == cache_scope("qwen", dtype="bfloat16", n_ctx=2048)
    assert len({cache_scope("qwen"), cache_scope("qwen", n_ctx=2048), cache_scope("qwen", n_ctx=4096)}) == 3
