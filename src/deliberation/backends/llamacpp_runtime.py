"""llama.cpp's low-level API (llama.h) as the llamacpp backend needs it: a loaded model, a one-sequence
prefill context that reads prompts (from scratch or from a cached prefix) and a multi-sequence decode
context that steps one token of every running sequence per ``llama_decode``. Why two contexts, and what is
bitwise reproducible: ``backends/llamacpp.py``.
"""

from __future__ import annotations

import ctypes
import os
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np

from deliberation.errors import DelibError, install_hint


def import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as err:
        raise DelibError(install_hint("llama-cpp-python", "llamacpp")) from err
    return llama_cpp


AMX_BUILT = "AMX_INT8 = 1"
"""How ``llama_print_system_info`` says the build has ggml's AMX kernels."""


def model_params(lib: Any) -> Any:
    """llama.cpp's default model parameters, less the extra weight buffers (AMX, repacking) where the build
    has ggml's AMX kernels: those segfault on the first decode of quantized models on some AMX CPUs
    (llama.cpp issue 20824; seen here with qwen2.5-coder-1.5b and smollm2-135m). The Makefile builds
    llama.cpp without them; this covers a llama-cpp-python installed otherwise (a wheel, a plain pip install
    on such a CPU)."""
    params = lib.llama_model_default_params()
    return _without_extra_bufts(params) if amx_built(lib) else params


def amx_built(lib: Any) -> bool:
    """Whether the loaded llama.cpp build has ggml's AMX kernels (``llama_print_system_info``)."""
    return AMX_BUILT in lib.llama_print_system_info().decode("utf-8", errors="replace")


@contextmanager
def llama_loads_as_backend(lib: Any, extra_bufts: bool = True) -> Iterator[None]:
    """While open, ``llama_cpp.Llama``, which reads the default model parameters itself (from the low-level
    module), loads models with ``model_params``: the bench's raw side stays like for like with the backend,
    and does not crash on an AMX build. ``extra_bufts=False`` also turns the extra weight buffers off for
    the backend itself, i.e. for every load on either side (``bench/batch_speedup.py
    --no-extra-bufts``: a build that crashes with them although it has no AMX kernels)."""
    low = lib.llama_cpp
    top_default, low_default = lib.llama_model_default_params, low.llama_model_default_params
    if not extra_bufts:
        lib.llama_model_default_params = lambda: _without_extra_bufts(top_default())
    low.llama_model_default_params = lambda: model_params(lib)
    try:
        yield
    finally:
        low.llama_model_default_params = low_default
        if not extra_bufts:
            lib.llama_model_default_params = top_default


def _without_extra_bufts(params: Any) -> Any:
    """``params`` with llama.cpp's extra weight buffers (repacked and AMX layouts) turned off."""
    params.use_extra_bufts = False
    return params


class Runtime:
    """A loaded model and its multi-sequence context: tokenizer, chat template and batched decode."""

    def __init__(self, path: os.PathLike, n_ctx: int, n_seq: int, n_batch: int, n_threads: int) -> None:
        self.lib = lib = import_llama_cpp()
        lib.llama_backend_init()
        self.model = lib.llama_model_load_from_file(os.fsencode(path), model_params(lib))
        if not self.model:
            raise DelibError(f"llama.cpp could not load {path}: not a GGUF file this llama.cpp reads, or too little "
                             "memory for it; check the file and the free memory")
        self.vocab = lib.llama_model_get_vocab(self.model)
        self.n_vocab = lib.llama_vocab_n_tokens(self.vocab)
        self.n_batch = n_batch
        self.ctx = self.prefill_ctx = self.batch = None
        self.prefill_ctx = self._context(n_ctx, 1, n_threads)  # prompts, one at a time, from an empty cache
        self.n_ctx = lib.llama_n_ctx(self.prefill_ctx)  # cells per sequence (llama.cpp may round n_ctx up)
        self.ctx = self._context(self.n_ctx * n_seq, n_seq, n_threads)  # decode: a token of every sequence
        self.batch = lib.llama_batch_init(n_batch, 0, 1)
        self._pieces: dict[int, bytes] = {}

    def _context(self, n_ctx: int, n_seq: int, n_threads: int) -> Any:
        params = self.lib.llama_context_default_params()
        params.n_ctx, params.n_seq_max = n_ctx, n_seq
        params.n_batch = params.n_ubatch = self.n_batch
        params.n_threads = params.n_threads_batch = n_threads
        # Both measured at least as fast as the alternatives for batched CPU decode here (per-sequence KV
        # streams were slower at 9 sequences); the batch-independence notes above are about these kernels.
        params.kv_unified = True
        params.flash_attn_type = self.lib.LLAMA_FLASH_ATTN_TYPE_ENABLED
        ctx = self.lib.llama_init_from_model(self.model, params)
        if not ctx:
            self.free()
            raise DelibError(
                f"llama.cpp could not create a context of {n_ctx} tokens; lower n_ctx or max_parallel"
            )
        return ctx

    def tokenize(self, text: str, add_special: bool) -> list[int]:
        data = text.encode("utf-8")
        size = len(data) + 8
        buf = (self.lib.llama_token * size)()
        n = self.lib.llama_tokenize(self.vocab, data, len(data), buf, size, add_special, True)
        if n < 0:  # buffer too small: -n is the size needed
            size = -n
            buf = (self.lib.llama_token * size)()
            n = self.lib.llama_tokenize(self.vocab, data, len(data), buf, size, add_special, True)
        return list(buf[:n])

    def piece(self, token: int, special: bool = False) -> bytes:
        """The bytes of one token (cached; control tokens render empty unless ``special``)."""
        key = token if not special else -1 - token
        if key not in self._pieces:
            buf = ctypes.create_string_buffer(64)
            n = self.lib.llama_token_to_piece(self.vocab, token, buf, 64, 0, special)
            if n < 0:
                buf = ctypes.create_string_buffer(-n)
                n = self.lib.llama_token_to_piece(self.vocab, token, buf, -n, 0, special)
            self._pieces[key] = buf.raw[:n]
        return self._pieces[key]

    def is_eog(self, token: int) -> bool:
        return bool(self.lib.llama_vocab_is_eog(self.vocab, token))

    def metadata(self, key: str) -> str | None:
        size = 1 << 16
        buf = ctypes.create_string_buffer(size)
        n = self.lib.llama_model_meta_val_str(self.model, key.encode(), buf, size)
        if n >= size:  # chat templates can be long; retry with the exact size
            buf = ctypes.create_string_buffer(n + 1)
            n = self.lib.llama_model_meta_val_str(self.model, key.encode(), buf, n + 1)
        return buf.value.decode("utf-8") if n >= 0 else None

    def special_text(self, token: int) -> str:
        return self.piece(token, special=True).decode("utf-8", errors="ignore") if token >= 0 else ""

    def prefill(self, prompt: Sequence[int], saved: Any = None, begin: int = 0,
                logits: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
        """Read ``prompt`` in the prefill context, in chunks of n_batch. Returns the logits after the last
        token and the prompt's KV cells as a state blob for ``place``.

        From an empty cache; or, with ``saved`` (a blob whose first ``begin`` cells hold ``prompt[:begin]``,
        from the prefix cache), from those cells, reading only the rest (none when ``logits`` are known).
        A prompt read inside the shared decode context would sit at an offset that depends on the other
        sequences, and llama.cpp's tiled attention for 64+ token ubatches sums differently at other
        offsets; read here, the same prompt and cache state always give the same logits and cells.
        """
        memory = self.lib.llama_get_memory(self.prefill_ctx)
        self.lib.llama_memory_clear(memory, True)
        if saved is not None:
            if self.lib.llama_state_seq_set_data(self.prefill_ctx, saved, len(saved), 0) == 0:
                raise DelibError("llama.cpp could not restore a cached prefix; raise n_ctx")
            self.lib.llama_memory_seq_rm(memory, 0, begin, -1)
        last = len(prompt) - 1
        for start in range(begin, len(prompt), self.n_batch):
            tokens = prompt[start : start + self.n_batch]
            chunk = [(t, start + i, 0, start + i == last) for i, t in enumerate(tokens)]
            self._decode(self.prefill_ctx, chunk)
        if begin < len(prompt):
            logits = self._logits(self.prefill_ctx, len(chunk) - 1)  # [n_vocab]
        return logits, self._save(self.prefill_ctx, 0)

    def _save(self, ctx: Any, seq: int) -> Any:
        """The KV cells of sequence ``seq`` of ``ctx`` as a state blob."""
        size = self.lib.llama_state_seq_get_size(ctx, seq)
        state = (ctypes.c_uint8 * size)()
        self.lib.llama_state_seq_get_data(ctx, state, size, seq)
        return state

    def save(self, slot: int) -> Any:
        """The KV cells of decode sequence ``slot`` (its prompt and the tokens decoded after it)."""
        return self._save(self.ctx, slot)

    def place(self, state: Any, slot: int) -> None:
        """Copy a prompt's KV cells (from ``prefill``) into sequence ``slot`` of the decode context."""
        if self.lib.llama_state_seq_set_data(self.ctx, state, len(state), slot) == 0:
            raise DelibError("llama.cpp could not place a prompt in the KV cache; raise n_ctx")

    def step(self, entries: Sequence[tuple[int, int, int]]) -> list[np.ndarray]:
        """Decode one (token, position, sequence id) per sequence; the next-token logits of each."""
        self._decode(self.ctx, [(token, pos, seq, True) for token, pos, seq in entries])
        return [self._logits(self.ctx, i) for i in range(len(entries))]

    def _decode(self, ctx: Any, entries: Sequence[tuple[int, int, int, bool]]) -> None:
        """One ``llama_decode`` of (token, position, sequence id, wants logits) entries."""
        batch = self.batch
        batch.n_tokens = len(entries)
        for i, (token, pos, seq, logits) in enumerate(entries):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, pos, 1
            batch.seq_id[i][0], batch.logits[i] = seq, logits
        code = self.lib.llama_decode(ctx, batch)
        if code != 0:
            raise DelibError(f"llama_decode failed with code {code}; lower max_parallel or raise n_ctx")

    def _logits(self, ctx: Any, index: int) -> np.ndarray:
        """Raw logits of batch entry ``index`` of the last decode, copied (the next decode overwrites)."""
        ptr = self.lib.llama_get_logits_ith(ctx, index)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy()  # [n_vocab] float32

    def clear(self) -> None:
        """Empty the decode context's KV cache (before and after every wave)."""
        self.lib.llama_memory_clear(self.lib.llama_get_memory(self.ctx), True)

    def free(self) -> None:
        """Release batch, contexts and model (whichever were created)."""
        if self.batch is not None:
            self.lib.llama_batch_free(self.batch)
        for ctx in (self.ctx, self.prefill_ctx):
            if ctx:
                self.lib.llama_free(ctx)
        self.lib.llama_model_free(self.model)
