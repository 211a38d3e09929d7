"""In-process llama.cpp backend that decodes a whole batch of requests together
(docs/design.md, section Models and speed).

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

Prefix reuse: identical prompts within one ``generate`` call are read once (every agent of round 0, or k
self-consistency samples, asks the same prompt), and across calls the prefix cache (``prefix_cache.py``,
what llama.cpp's server and vLLM do) restores the cells of the longest token prefix a recent sequence
shares with a new prompt, so a continuation prompt reads only its new turn. Restored cells come from
other kernel shapes than a fresh read (a generated token's from a one-token step), so with reuse a request's
output can depend on what ran before it, like the batch dependence above: runs are exact through the
response cache, and ``prefix_cache_mb=0`` turns reuse off.

Memory: the KV caches hold ``n_ctx * (max_parallel + 1)`` tokens (about 2.3 GB for Qwen2.5-1.5B at the
defaults; ``n_ctx`` is the per-sequence window, lower it to shrink this), plus ``prefix_cache_mb`` of saved
cells in host memory.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from typing import Any, Sequence

import numpy as np

from deliberation.backends import catalogue as models
from deliberation.backends.base import cache_scope
from deliberation.backends.cpu_share import free_threads
from deliberation.backends.llamacpp_runtime import Runtime, import_llama_cpp
from deliberation.backends.llamacpp_sequence import SequenceState
from deliberation.backends.prefix_cache import Match, PrefixCache
from deliberation.errors import DelibError, Interrupted
from deliberation.types import Completion, GenerationRequest

DEFAULT_N_CTX = 8192
MIN_REUSE = 64
"""Shorter cached prefixes are read again: the chat template's system turn and the problem header, which
every round-0 prompt shares, cost little to read, and reading them keeps round 0 bitwise what it is without
reuse (restored cells round differently: ``prefix_cache.py``)."""
DEFAULT_PREFIX_CACHE_MB = 2048
"""About 75k tokens of Qwen2.5-1.5B's KV cells (28 KiB a token): a tree build's questions in flight."""


def _changed_settings(n_ctx: int, chat_format: str | None) -> dict[str, object]:
    """The settings off their defaults that change outputs, for the cache key: a smaller window cuts answers
    short; another template is another prompt (named by a hash of the template)."""
    changed: dict[str, object] = {"n_ctx": n_ctx} if n_ctx != DEFAULT_N_CTX else {}
    if chat_format:
        changed["chat_format"] = hashlib.sha256(chat_format.encode()).hexdigest()[:12]
    return changed


class LlamaCppBackend:
    """llama.cpp in this process, batched. ``model``: catalogue name, ``.gguf`` path or HF id.

    ``n_ctx``: context window of each sequence (prompt + completion; the KV caches hold
    ``n_ctx * (max_parallel + 1)`` tokens); ``max_parallel``: sequences decoded together; ``n_batch``: prompt
    tokens per ``llama_decode``; ``n_threads``: default the cores this process may use less those other work
    keeps busy (``cpu_share.py``: llama.cpp processes side by side with a thread per core slow each other
    up to 100x); ``chat_format``: a
    Jinja2 chat template replacing the GGUF's ``tokenizer.chat_template``; ``prefix_cache_mb``: host memory
    for the KV cells of recent sequences, whose prefixes later prompts reuse (``prefix_cache.py``; 0: off).
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
        prefix_cache_mb: float = DEFAULT_PREFIX_CACHE_MB,
    ) -> None:
        if not 1 <= max_parallel <= n_batch:  # a decode step holds one token of each sequence
            raise DelibError(f"max_parallel must be between 1 and n_batch ({n_batch}); got {max_parallel}")
        import_llama_cpp()  # fail fast with the install hint, before resolving (maybe assembling) the model
        self.model = str(model)
        self.cache_scope = cache_scope(self.model, **_changed_settings(n_ctx, chat_format))
        path = models.resolve(model)
        # llama-cpp-python maps ggml WARN to logging.ERROR (its level table predates ggml adding DEBUG),
        # so only CRITICAL silences the load chatter; real failures surface as return codes -> DelibError.
        logging.getLogger("llama-cpp-python").setLevel(logging.DEBUG if verbose else logging.CRITICAL)
        threads = n_threads or free_threads()
        self._rt: Runtime | None = Runtime(path, n_ctx, max_parallel, n_batch, threads)
        self._max_parallel = max_parallel
        self._formatter = self._chat_formatter(chat_format)
        self._prefix = PrefixCache(int(prefix_cache_mb * 2**20)) if prefix_cache_mb > 0 else None
        self.prompt_tokens_read = self.prompt_tokens_reused = 0  # over every prompt of every call
        self._lock = threading.Lock()
        self._stop = threading.Event()  # set by interrupt(): generate() stops at its next decode step

    @staticmethod
    def context_window(n_ctx: int = DEFAULT_N_CTX, **_: Any) -> int:
        """The per-sequence window a backend built with these options has, known before loading the model
        (``runs/runner.py`` checks a team's prompts against it up front; llama.cpp may round it up)."""
        return n_ctx

    @staticmethod
    def records_summaries(**_: Any) -> bool:
        """Every completion carries its summary: the sampler has each token's logits anyway."""
        return True

    @staticmethod
    def check_model(model: str) -> None:
        """Refuse a model ``__init__`` could not load (unknown, not installed, a missing file), without loading
        it: a mixed team (backends/team.py) checks every agent's model before it loads the first."""
        models.check(model)

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
        """One Completion per request, in order; decoded together in waves of ``max_parallel``, the requests of
        fewest ``max_tokens`` first (stable): a wave lasts as long as its longest sequence, so one-token critic
        calls batched with samples (a tree build's coalesced questions) would otherwise hold idle slots."""
        with self._lock:
            if self._rt is None:
                raise DelibError("this LlamaCppBackend was closed; create a new one")
            order = sorted(range(len(requests)), key=lambda i: requests[i].max_tokens)  # short ones wave together
            seqs = [self._sequence(k, requests[i]) for k, i in enumerate(order)]
            read: dict[tuple[int, ...], tuple[np.ndarray, Any]] = {}  # prompt -> (logits, KV state)
            completions: list[Completion] = []
            start = time.perf_counter()
            for first in range(0, len(seqs), self._max_parallel):
                completions += self._wave(seqs[first : first + self._max_parallel], read, start)
            back = {i: c for i, c in zip(order, completions)}
            return [back[i] for i in range(len(requests))]

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
                    read[key] = self._read(seq.prompt)
                logits, state = read[key]
                self._rt.place(state, seq.slot)
                seq.advance(logits, self._rt)
            active = self._finish(seqs, start)
            while active:
                self._check_stop()
                for seq, logits in zip(active, self._rt.step([s.next_input() for s in active])):
                    seq.stepped(logits, self._rt)  # logits: [n_vocab]
                active = self._finish(active, start)
            self._keep(seqs)
        finally:
            self._rt.clear()
        return [seq.completion() for seq in seqs]

    def _read(self, prompt: list[int]) -> tuple[np.ndarray, Any]:
        """Prefill ``prompt`` from its longest cached prefix of at least ``MIN_REUSE`` tokens (at least its
        last token is read, unless the logits after the whole prompt are known); the result is cached in turn."""
        found = self._prefix.match(prompt) if self._prefix is not None else Match(None, 0)
        whole = found.entry is not None and found.length == len(prompt)
        known = found.entry.logits.get(len(prompt)) if whole else None
        if known is None and found.length < MIN_REUSE:
            found = Match(None, 0)
        begin = len(prompt) if known is not None else min(found.length, len(prompt) - 1)
        saved = found.entry.state if found.entry is not None and begin > 0 else None
        logits, state = self._rt.prefill(prompt, saved, begin if saved is not None else 0, known)
        self.prompt_tokens_reused += begin if saved is not None else 0
        self.prompt_tokens_read += len(prompt) - (begin if saved is not None else 0)
        if self._prefix is not None:
            self._prefix.put(prompt, state, logits)
        return logits, state

    def _keep(self, seqs: list[SequenceState]) -> None:
        """Save each finished sequence's cells (its prompt and the tokens decoded after it) for reuse."""
        if self._prefix is None:
            return
        for seq in seqs:
            self._prefix.put((seq.prompt + seq.tokens)[: len(seq.prompt) + seq.steps], self._rt.save(seq.slot))

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
