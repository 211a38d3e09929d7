"""Batching across questions: several threads' ``generate`` calls merged into one call of the backend behind.

One round of one question is a batch of ``agents`` requests (3 by default), and on a CPU llama.cpp gains
little from batches that small (docs/results/bench/). With ``--concurrency N`` the runner keeps N
questions in flight, each in its own thread, all sharing one ``CoalescingBackend``: a call waits until
every caller has a request pending, or until ``window_s`` has passed since the oldest pending one, and
then one caller sends all pending requests as one batch and hands each caller its completions.

Order and content are kept per caller, but a backend whose outputs depend on the batch a request shares
(llama.cpp after the first token, see backends/llamacpp.py) samples differently than without
concurrency; a response cache in front of the model keeps reruns exact. ``Completion.latency_s`` then
spans the merged batch, so episodes that shared a batch are each charged its full time.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Sequence

from deliberation.backends.base import Backend, interrupt
from deliberation.errors import Interrupted
from deliberation.types import Completion, GenerationRequest


@dataclass(eq=False)
class _Ticket:
    """One caller's requests, and what came back for them."""

    requests: list[GenerationRequest]
    result: list[Completion] | None = None
    error: BaseException | None = None
    arrived: float = field(default_factory=time.monotonic)

    @property
    def done(self) -> bool:
        return self.result is not None or self.error is not None


class CoalescingBackend:
    """Merges concurrent ``generate`` calls of up to ``callers`` threads into single calls of ``inner``."""

    def __init__(self, inner: Backend, callers: int, window_s: float = 0.05) -> None:
        self.inner, self.callers, self.window_s = inner, callers, window_s
        self.name, self.model, self.supports_logprobs = inner.name, inner.model, inner.supports_logprobs
        self.batch_sizes: list[int] = []  # requests per call of ``inner``, in order
        self._cond = threading.Condition()
        self._pending: list[_Ticket] = []
        self._busy = False
        self._interrupted = False

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        if not requests:
            return []
        ticket = _Ticket(list(requests))
        with self._cond:
            if self._interrupted:
                raise Interrupted()
            self._pending.append(ticket)
            self._cond.notify_all()
            batch = self._wait_or_lead(ticket)
        if batch is not None:
            self._send(batch)
        if ticket.error is not None:
            raise ticket.error
        return ticket.result

    def _wait_or_lead(self, ticket: _Ticket) -> list[_Ticket] | None:
        """Under the lock: None once ``ticket`` is served, or the pending tickets when this caller should
        send them (nothing is being sent, and every caller is waiting or the window has passed)."""
        while not ticket.done:
            if self._busy or ticket not in self._pending:
                self._cond.wait()
                continue
            left = self._pending[0].arrived + self.window_s - time.monotonic()
            if len(self._pending) >= self.callers or left <= 0:
                batch, self._pending, self._busy = self._pending, [], True
                return batch
            self._cond.wait(left)
        return None

    def _send(self, batch: list[_Ticket]) -> None:
        """One call of ``inner`` for every request of ``batch``; results (or the error) to each ticket."""
        flat = [r for t in batch for r in t.requests]
        try:
            outs = iter(self.inner.generate(flat))
            for t in batch:
                t.result = [next(outs) for _ in t.requests]
        except BaseException as err:  # every caller of the batch sees the failure, not just the sender
            for t in batch:
                t.error = err
        finally:
            with self._cond:
                self._busy = False
                self.batch_sizes.append(len(flat))
                self._cond.notify_all()

    def interrupt(self) -> None:
        """Fail every waiting and later call with ``Interrupted`` and pass the interrupt on to ``inner``
        (the call being sent stops where ``inner`` can stop it)."""
        with self._cond:
            self._interrupted = True
            for ticket in self._pending:
                ticket.error = Interrupted()
            self._pending = []
            self._cond.notify_all()
        interrupt(self.inner)

    def close(self) -> None:
        self.inner.close()
