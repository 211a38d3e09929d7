"""The Backend protocol and the response-cache scope helper beside it."""

from __future__ import annotations

from deliberation.backends.base import Backend, cache_scope


class _Answers:
    name, model, supports_logprobs = "x", "m", False

    def generate(self, requests):
        return []


class _Closable(_Answers):
    def close(self) -> None:
        pass


def test_a_backend_must_be_closable() -> None:
    """Runs close their backend when they end (models, servers): the protocol requires close()."""
    assert isinstance(_Closable(), Backend) and not isinstance(_Answers(), Backend)


def test_cache_scope_names_only_the_settings_off_their_defaults() -> None:
    assert cache_scope("qwen") == "qwen"  # at the defaults: the plain model name, as caches before scopes
    assert cache_scope("qwen", n_ctx=2048, dtype="bfloat16") == cache_scope("qwen", dtype="bfloat16", n_ctx=2048)
    assert len({cache_scope("qwen"), cache_scope("qwen", n_ctx=2048), cache_scope("qwen", n_ctx=4096)}) == 3
