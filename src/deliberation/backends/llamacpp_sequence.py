"""Per-request decoding state and sampling of the llamacpp backend (``backends/llamacpp.py``).

Each request samples from its own logits with its own ``numpy.random.default_rng(request.seed)``, so the
token drawn at step k depends only on the request, never on the other sequences of its batch. Kept apart
from the llama.cpp plumbing: nothing here calls llama.h; a ``Vocabulary`` (token bytes, end-of-generation
test) is all it needs of the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from deliberation.backends.logprob_summary import chosen_logprob, summarize
from deliberation.types import Completion, GenerationRequest, TokenLogprob


class Vocabulary(Protocol):
    """What decoding needs of a model's vocabulary (``llamacpp_runtime.Runtime`` provides it)."""

    def piece(self, token: int, special: bool = False) -> bytes: ...

    def is_eog(self, token: int) -> bool: ...


def log_softmax(logits: np.ndarray) -> np.ndarray:
    z = logits.astype(np.float64)  # [n_vocab]
    z -= z.max()
    return z - np.log(np.exp(z).sum())


TAIL_NATS = 30.0
"""Tokens more than this many nats below the most likely one are never drawn: at most e^-30 of the mass
each, under 2e-8 together for a 152k vocabulary, while the exponentials and the cumulative sum cover only
the rest (a median of 11k of smollm2's 49k tokens at temperature 0.7, measured on its real logits)."""


def sample(logits: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """Greedy at temperature 0, else one draw from softmax(logits / temperature) over the tokens within
    ``TAIL_NATS`` of the best (one ``rng.random()`` per draw, inverse-CDF in vocabulary order)."""
    if temperature <= 0:
        return int(np.argmax(logits))
    z = logits / np.float32(temperature)  # [n_vocab] float32
    top = z.max()
    keep = np.flatnonzero(z >= top - TAIL_NATS)  # [k] token ids, ascending
    cdf = np.cumsum(np.exp(z[keep].astype(np.float64) - top))  # [k]
    return int(keep[min(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"), len(keep) - 1)])


@dataclass(eq=False)
class SequenceState:
    """Decoding state of one request while it occupies a sequence slot of the llamacpp backend."""

    index: int  # position of the request in the generate() call's wave order
    request: GenerationRequest
    slot: int  # llama.cpp sequence id
    prompt: list[int]
    limit: int  # max_tokens, capped so the sequence fits the context
    rng: np.random.Generator
    latency: float = 0.0  # seconds from the start of the generate() call to its last token
    tokens: list[int] = field(default_factory=list)
    data: bytearray = field(default_factory=bytearray)
    logprobs: list[TokenLogprob] = field(default_factory=list)
    chosen: list[float] = field(default_factory=list)  # every token's log-probability, for the summary
    ends: list[int] = field(default_factory=list)  # character offset in ``text`` where each token ends
    text: str = ""
    finish: str | None = None
    steps: int = 0  # tokens decoded after the prompt: the sequence's KV cells are its prompt and tokens[:steps]

    def next_input(self) -> tuple[int, int, int]:
        """(token, position, sequence id) of the last sampled token, to be decoded next."""
        return self.tokens[-1], len(self.prompt) + len(self.tokens) - 1, self.slot

    def stepped(self, logits: np.ndarray, vocab: Vocabulary) -> None:
        """The last sampled token was decoded (its cells added) and gave ``logits``: sample the next."""
        self.steps += 1
        self.advance(logits, vocab)

    def advance(self, logits: np.ndarray, vocab: Vocabulary) -> None:
        """Sample the next token from ``logits`` with this request's own generator and record it."""
        self.accept(sample(logits, self.request.temperature, self.rng), logits, vocab)

    def accept(self, token: int, logits: np.ndarray, vocab: Vocabulary) -> None:
        """Record the token sampled from ``logits``, then check EOS/EOG, stop strings and the limit."""
        if self.limit == 0:
            self.finish = "length"
            return
        if vocab.is_eog(token):  # not part of the text nor counted, as in llama-cpp-python
            self.finish = "stop"
            return
        self.tokens.append(token)
        self.data += vocab.piece(token)
        if self.request.logprobs:
            self.logprobs.append(token_logprob(logits, token, self.request.top_logprobs, vocab))
        self.chosen.append(chosen_logprob(logits, token))
        self.text = self.data.decode("utf-8", errors="ignore")
        self.ends.append(len(self.text))
        cut = [i for i in (self.text.find(s) for s in self.request.stop if s) if i >= 0]
        if cut:
            self.text, self.finish = self.text[: min(cut)], "stop"
        elif len(self.tokens) >= self.limit:
            self.finish = "length"

    def completion(self) -> Completion:
        return Completion(
            text=self.text,
            prompt_tokens=len(self.prompt),
            completion_tokens=len(self.tokens),
            logprobs=tuple(self.logprobs) if self.request.logprobs else None,
            finish_reason=self.finish or "length",
            latency_s=self.latency,
            summary=summarize(self.chosen, [min(e, len(self.text)) for e in self.ends]),
        )


def token_logprob(logits: np.ndarray, token: int, top_n: int, vocab: Vocabulary) -> TokenLogprob:
    """Log-softmax of the raw logits (before temperature), with the ``top_n`` best alternatives."""
    logp = log_softmax(logits)  # [n_vocab]
    top: tuple[tuple[str, float], ...] = ()
    if top_n > 0:
        best = np.argpartition(-logp, top_n)[:top_n]
        best = best[np.argsort(-logp[best], kind="stable")]
        top = tuple((token_text(vocab, int(t)), float(logp[t])) for t in best)
    return TokenLogprob(token_text(vocab, token), float(logp[token]), top)


def token_text(vocab: Vocabulary, token: int) -> str:
    return vocab.piece(token).decode("utf-8", errors="replace")
