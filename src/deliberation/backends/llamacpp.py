"""In-process llama.cpp backend that decodes a whole batch of requests together (DESIGN.md section 4).

Batching is the main speed lever on CPU: one forward pass over one new token of each of 9 sequences
costs little more than a pass over one, because the weights are read once per pass. This backend drives
llama-cpp-python's low-level API (llama.h). Requests run in waves of ``max_parallel``; each request of a
wave is one sequence id of a decode context (``n_seq_max`` > 1, one unified KV pool of
``n_ctx * max_parallel`` cells, flash attention on).
A wave first reads each prompt alone in a one-sequence prefill context, in chunks of ``n_batch`` tokens,
and copies its KV cells into the decode context; then every ``llama_decode`` carries one token of every
running sequence, until all finish (EOS/EOG, a stop string, or ``max_tokens``).

Sampling (``llamacpp_sequence.py``) is done in numpy, per sequence, with
``numpy.random.default_rng(request.seed)`` over the vocabulary less its far tail (``TAIL_NATS``;
temperature 0 = greedy): the token drawn at step k depends only on the request's own logits and its own
generator.

Guaranteed: the same requests with the same seeds, batched the same way, give the same outputs call
after call (llama.cpp's CPU kernels are deterministic for a fixed thread count). Also by construction: a
request's first-token logits, and so a one-token critic answer and its logprobs, are bitwise the same
alone or in any batch, because every prompt is read alone in its own context (same cells, same chunks).
Later tokens may differ between a request run alone and in a batch. llama.cpp picks kernels by batch
shape: Qwen2.5 Q4_K_M's multi-row matrix products round differently from single-row ones (logits differ
by ~0.3 and occasionally flip a token; measured here), and a lone sequence with 512+ KV cells gets a
split-KV attention kernel (``ggml_compute_forward_flash_attn_ext_f16``, ggml-cpu/ops.cpp). Where neither
applies (SmolLM2-135M Q4_1, short sequences) outputs agree alone and batched; tests/backends/
test_llamacpp.py pins that, and finished sequences keep their cells until the wave ends so that a running
sequence's cells stay in order (freed cells would be refilled and reorder its attention sum). Never
guaranteed: equality across thread counts, CPU types or llama.cpp builds.

Memory: the KV caches hold ``n_ctx * (max_parallel + 1)`` tokens (about 2.3 GB for Qwen2.5-1.5B at the
defaults; ``n_ctx`` is the per-sequence window, lower it to shrink this). Identical prompts within one
``generate`` call are read once (the usual case: every agent of round 0, or k self-consistency samples,
asks the same prompt); the cache is not reused across calls, so each call re-reads its prompts.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import threading
import time
from typing import Any, Sequence

import numpy as np

from deliberation.backends import catalogue as models
from deliberation.backends.base import cache_scope
from deliberation.errors import DelibError, Interrupted, install_hint
from deliberation.backends.llamacpp_sequence import SequenceState
from deliberation.types import Completion, GenerationRequest


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as err:
        raise DelibError(install_hint("llama-cpp-python", "llamacpp")) from err
    return llama_cpp


DEFAULT_N_CTX = 8192


def _changed_settings(n_ctx: int, chat_format: str | None) -> dict[str, object]:
    """The settings off their defaults that change outputs, for the cache key: a smaller window cuts answers
    short; another template is another prompt (named by a hash of the template)."""
    changed: dict[str, object] = {"n_ctx": n_ctx} if n_ctx != DEFAULT_N_CTX else {}
    if chat_format:
        changed["chat_format"] = hashlib.sha256(chat_format.encode()).hexdigest()[:12]
    return changed


def _default_threads() -> int:
    """All cores this process may run on (llama-cpp-python's own default is half of them)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class _Runtime:
    """A loaded model and its multi-sequence context: tokenizer, chat template and batched decode."""

    def __init__(self, path: os.PathLike, n_ctx: int, n_seq: int, n_batch: int, n_threads: int) -> None:
        self.lib = lib = _import_llama_cpp()
        lib.llama_backend_init()
        self.model = lib.llama_model_load_from_file(os.fsencode(path), lib.llama_model_default_params())
        if not self.model:
            raise DelibError(f"llama.cpp could not load {path}; is it a valid GGUF file?")
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

    def prefill(self, prompt: Sequence[int]) -> tuple[np.ndarray, Any]:
        """Read ``prompt`` in the prefill context from an empty cache, in chunks of n_batch. Returns the
        logits after the last token and the prompt's KV cells as a state blob for ``place``.

        A prompt read inside the shared decode context would sit at an offset that depends on the other
        sequences, and llama.cpp's tiled attention for 64+ token ubatches sums differently at other
        offsets; read here, a prompt always gives the same logits and cells.
        """
        self.lib.llama_memory_clear(self.lib.llama_get_memory(self.prefill_ctx), True)
        last = len(prompt) - 1
        for start in range(0, len(prompt), self.n_batch):
            tokens = prompt[start : start + self.n_batch]
            chunk = [(t, start + i, 0, start + i == last) for i, t in enumerate(tokens)]
            self._decode(self.prefill_ctx, chunk)
        logits = self._logits(self.prefill_ctx, len(chunk) - 1)  # [n_vocab]
        size = self.lib.llama_state_seq_get_size(self.prefill_ctx, 0)
        state = (ctypes.c_uint8 * size)()
        self.lib.llama_state_seq_get_data(self.prefill_ctx, state, size, 0)
        return logits, state

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


class LlamaCppBackend:
    """llama.cpp in this process, batched. ``model``: catalogue name, ``.gguf`` path or HF id.

    ``n_ctx``: context window of each sequence (prompt + completion; the KV caches hold
    ``n_ctx * (max_parallel + 1)`` tokens); ``max_parallel``: sequences decoded together; ``n_batch``: prompt
    tokens per ``llama_decode``; ``n_threads``: default all cores this process may use; ``chat_format``: a
    Jinja2 chat template replacing the GGUF's ``tokenizer.chat_template``.
    """

    name = "llamacpp"
    supports_logprobs = True

    def __init__(
        self,
        model: str = "qwen2.5-coder-1.5b",
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        n_batch: int = 512,
        max_parallel: int = 9,
        chat_format: str | None = None,
        verbose: bool = False,
    ) -> None:
        if not 1 <= max_parallel <= n_batch:  # a decode step holds one token of each sequence
            raise DelibError(f"max_parallel must be between 1 and n_batch ({n_batch}); got {max_parallel}")
        _import_llama_cpp()  # fail fast with the install hint, before resolving (maybe assembling) the model
        self.model = str(model)
        self.cache_scope = cache_scope(self.model, **_changed_settings(n_ctx, chat_format))
        path = models.resolve(model)
        # llama-cpp-python maps ggml WARN to logging.ERROR (its level table predates ggml adding DEBUG),
        # so only CRITICAL silences the load chatter; real failures surface as return codes -> DelibError.
        logging.getLogger("llama-cpp-python").setLevel(logging.DEBUG if verbose else logging.CRITICAL)
        threads = n_threads or _default_threads()
        self._rt: _Runtime | None = _Runtime(path, n_ctx, max_parallel, n_batch, threads)
        self._max_parallel = max_parallel
        self._formatter = self._chat_formatter(chat_format)
        self._lock = threading.Lock()
        self._stop = threading.Event()  # set by interrupt(): generate() stops at its next decode step

    def _chat_formatter(self, chat_format: str | None) -> Any:
        template = chat_format or self._rt.metadata("tokenizer.chat_template")
        if not template:
            raise DelibError(f"{self.model} has no chat template in its GGUF; pass chat_format=<jinja2>")
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        lib, vocab = self._rt.lib, self._rt.vocab
        eos, bos = lib.llama_vocab_eos(vocab), lib.llama_vocab_bos(vocab)
        return Jinja2ChatFormatter(template, self._rt.special_text(eos), self._rt.special_text(bos))

    def prompt_tokens(self, request: GenerationRequest) -> list[int]:
        """The chat-templated prompt of ``request`` as tokens (the template writes BOS when it wants one)."""
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        rendered = self._formatter(messages=messages)
        return self._rt.tokenize(rendered.prompt, add_special=not rendered.added_special)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """One Completion per request, in order; decoded together in waves of ``max_parallel``."""
        with self._lock:
            if self._rt is None:
                raise DelibError("this LlamaCppBackend was closed; create a new one")
            seqs = [self._sequence(i, r) for i, r in enumerate(requests)]
            read: dict[tuple[int, ...], tuple[np.ndarray, Any]] = {}  # prompt -> (logits, KV state)
            completions: list[Completion] = []
            start = time.perf_counter()
            for first in range(0, len(seqs), self._max_parallel):
                completions += self._wave(seqs[first : first + self._max_parallel], read, start)
            return completions

    def _sequence(self, index: int, request: GenerationRequest) -> SequenceState:
        prompt = self.prompt_tokens(request)
        if len(prompt) >= self._rt.n_ctx:
            n_ctx = self._rt.n_ctx
            raise DelibError(f"a prompt of {len(prompt)} tokens does not fit n_ctx={n_ctx}; raise n_ctx")
        limit = min(request.max_tokens, self._rt.n_ctx - len(prompt))  # the sequence must fit its n_ctx
        rng = np.random.default_rng(request.seed)
        return SequenceState(index, request, index % self._max_parallel, prompt, limit, rng)

    def _wave(self, seqs: list[SequenceState], read: dict[tuple[int, ...], tuple[np.ndarray, Any]],
              start: float) -> list[Completion]:
        """Decode ``seqs`` (at most max_parallel) until all finish, on an empty KV cache. ``read`` holds
        the prompts already read in this call: a prompt asked again (k samples, agents of round 0) is read
        once and its cells copied, which gives the same bytes as reading it again.

        Finished sequences keep their cells until the wave ends: freeing them would let llama.cpp put a
        running sequence's next token in a freed cell before its earlier ones, which reorders its
        attention sum and makes its logits depend on its neighbours."""
        self._rt.clear()
        try:
            for seq in seqs:
                self._check_stop()
                key = tuple(seq.prompt)
                if key not in read:
                    read[key] = self._rt.prefill(seq.prompt)
                logits, state = read[key]
                self._rt.place(state, seq.slot)
                seq.advance(logits, self._rt)
            active = self._finish(seqs, start)
            while active:
                self._check_stop()
                for seq, logits in zip(active, self._rt.step([s.next_input() for s in active])):
                    seq.advance(logits, self._rt)  # logits: [n_vocab]
                active = self._finish(active, start)
        finally:
            self._rt.clear()
        return [seq.completion() for seq in seqs]

    def _check_stop(self) -> None:
        if self._stop.is_set():
            raise Interrupted()

    @staticmethod
    def _finish(active: list[SequenceState], start: float) -> list[SequenceState]:
        """Stamp the latency of sequences that just finished; return those still running."""
        for seq in active:
            if seq.finish and not seq.latency:
                seq.latency = time.perf_counter() - start
        return [s for s in active if not s.finish]

    def interrupt(self) -> None:
        """Stop the running ``generate`` at its next decode step, and every later one, with ``Interrupted``
        (callable from any thread; it does not wait for the lock that ``generate`` holds)."""
        self._stop.set()

    def close(self) -> None:
        """Free the llama.cpp context and model; the backend cannot generate afterwards."""
        with self._lock:
            if self._rt is not None:
                self._rt.free()
                self._rt = None
