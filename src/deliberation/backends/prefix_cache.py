"""The llamacpp backend's prefix cache: KV cells of recent sequences kept in host memory, LRU within a budget.

What llama.cpp's server does with ``--cache-ram`` (its host-memory prompt cache) and vLLM with automatic
prefix caching, for our in-process backend: after a sequence is read or generated, its KV cells are saved
(``llama_state_seq_get_data``: a blob of every layer's K and V rows for its cells) under its tokens. A new
request finds the entry sharing its longest token prefix, restores those cells into the prefill context
and reads only the rest of its prompt. With continuation prompts (``engine/prompts/continuation.py``) a
critic or update request starts with exactly what its agent's sequence holds, so only its new turn is read.

Correctness rests on causal attention: the cells of tokens[:m] depend only on tokens[:m], so any entry's
first m cells serve any prompt that starts with the same m tokens. They are not bitwise the cells a fresh
read would compute (a generated token's cells come from a one-token decode step, a read prompt's from a
chunk of up to n_batch tokens, and llama.cpp's kernels round differently by batch shape), so outputs with
reuse may differ in the last bits from outputs without it; tests/backends/test_prefix_cache.py measures how
often that changes a greedy output. Reproducibility across runs goes through the response cache, as for
batching.

Entries also keep the logits after their last token where they are known (a read prompt), keyed by prefix
length, so asking a whole prompt again costs no decode and gives bitwise the same first token.
Nothing here calls llama.h; the backend passes blobs in and out.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np


@dataclass(eq=False)
class Entry:
    """One saved sequence: its tokens, its KV cells as a state blob, and known next-token logits."""

    tokens: np.ndarray  # [n] int64
    state: Any  # a buffer of len(state) bytes (llama_state_seq_get_data)
    logits: dict[int, np.ndarray] = field(default_factory=dict)  # prefix length -> [n_vocab] float32

    @property
    def nbytes(self) -> int:
        return len(self.state) + sum(v.nbytes for v in self.logits.values()) + self.tokens.nbytes


@dataclass(frozen=True)
class Match:
    """The entry sharing the longest prefix with a prompt, and that prefix's length in tokens."""

    entry: Entry | None
    length: int


def common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    """Length of the longest common prefix of two token arrays."""
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


class PrefixCache:
    """Saved sequences, least recently used first, holding at most ``budget_bytes`` together."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self._entries: OrderedDict[tuple[int, ...], Entry] = OrderedDict()
        self.nbytes = 0
        self.evicted = 0  # entries dropped to stay within the budget

    def __len__(self) -> int:
        return len(self._entries)

    def match(self, tokens: Sequence[int]) -> Match:
        """The entry with the longest common prefix with ``tokens`` (marked as just used), or none."""
        query = np.asarray(tokens, dtype=np.int64)
        best = Match(None, 0)
        for entry in self._entries.values():
            length = common_prefix(entry.tokens, query)
            if length > best.length:
                best = Match(entry, length)
        if best.entry is not None:
            self._entries.move_to_end(_key(best.entry.tokens))
        return best

    def put(self, tokens: Sequence[int], state: Any, logits: np.ndarray | None = None) -> None:
        """Save the cells of ``tokens`` with the logits after them, if known. An entry already extending
        ``tokens`` only gains the logits; entries that ``tokens`` extend are folded into the new one (their
        logits kept); then the least recently used go until the budget holds."""
        key = tuple(int(t) for t in tokens)
        longer = next((k for k in self._entries if len(k) >= len(key) and k[: len(key)] == key), None)
        if longer is not None:
            self._add_logits(longer, len(key), logits)
            return
        new = Entry(np.asarray(key, dtype=np.int64), state, {len(key): logits} if logits is not None else {})
        if new.nbytes > self.budget_bytes:
            return
        for old_key in [k for k in self._entries if key[: len(k)] == k]:
            new.logits = {**self._drop(old_key).logits, **new.logits}
        self._entries[key] = new
        self.nbytes += new.nbytes
        self._evict()

    def _add_logits(self, key: tuple[int, ...], length: int, logits: np.ndarray | None) -> None:
        entry = self._entries[key]
        self._entries.move_to_end(key)
        if logits is not None and length not in entry.logits:
            entry.logits[length] = logits
            self.nbytes += logits.nbytes
            self._evict()

    def _drop(self, key: tuple[int, ...]) -> Entry:
        entry = self._entries.pop(key)
        self.nbytes -= entry.nbytes
        return entry

    def _evict(self) -> None:
        while self.nbytes > self.budget_bytes and self._entries:
            self._drop(next(iter(self._entries)))
            self.evicted += 1


def _key(tokens: np.ndarray) -> tuple[int, ...]:
    return tuple(int(t) for t in tokens)
