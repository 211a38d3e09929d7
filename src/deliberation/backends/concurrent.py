"""Running many questions through one backend: ``in_flight`` keeps N questions in flight with their
requests merged into shared batches (``CoalescingBackend``), and ``stopping`` makes Ctrl-C stop them
promptly; ``in_order`` is ``in_flight`` with the results in the items' order. Used by the resumable
per-question jobs (outputs/driver.py), a Ray worker (runs/distributed.py) and the optimisations (rl/)."""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Callable, Generator, Iterator, Sequence, TypeVar

from deliberation.backends.base import Backend, interrupt
from deliberation.backends.coalesce import CoalescingBackend

T, R = TypeVar("T"), TypeVar("R")


def in_flight(fn: Callable[[T, Backend], R], items: Sequence[T], backend: Backend,
              concurrency: int) -> Generator[R, None, None]:
    """``fn(item, backend)`` for every item: in order when ``concurrency`` is 1, else in ``concurrency``
    threads sharing a ``CoalescingBackend`` over ``backend``, yielded as they finish. A failure stops the
    items not yet started and is raised once the running ones are done. Ctrl-C while waiting for them also
    interrupts the running ones (``backends.base.interrupt``): their LLM calls stop early where the backend
    can stop them, instead of the process waiting minutes for them to finish; ``stopping`` does the same
    for a Ctrl-C that reaches the consumer."""
    if concurrency <= 1:
        yield from (fn(item, backend) for item in items)
        return
    shared = CoalescingBackend(backend, callers=min(concurrency, len(items)) or 1)
    pool = ThreadPoolExecutor(concurrency, thread_name_prefix="delib-question")
    try:
        for future in _as_finished([pool.submit(fn, item, shared) for item in items]):
            yield future.result()
    except KeyboardInterrupt:
        interrupt(shared)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def in_order(fn: Callable[[T, Backend], R], items: Sequence[T], backend: Backend, concurrency: int) -> list[R]:
    """``in_flight``'s results, listed in the order of ``items`` (for a job that needs all of them together,
    as an optimisation's iteration does, rather than each as it finishes)."""
    done = dict(in_flight(lambda pair, shared: (pair[0], fn(pair[1], shared)), list(enumerate(items)), backend,
                          concurrency))
    return [done[i] for i in range(len(items))]


def _as_finished(futures: list[Future], poll_s: float = 0.25) -> Iterator[Future]:
    """``futures`` as they finish (those found finished together in submission order), never blocking
    longer than ``poll_s`` at a time. ``as_completed`` waits on a lock without a timeout, and a SIGINT that
    lands just before that wait begins sets CPython's flag without waking it: Ctrl-C was lost about one
    time in 200 (tests/backends/test_coalesce.py). A timed wait returns to Python, which sees the flag."""
    order = {future: i for i, future in enumerate(futures)}
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=poll_s, return_when=FIRST_COMPLETED)
        yield from sorted(done, key=order.__getitem__)


@contextmanager
def stopping(items: Generator[R, None, None], backend: Backend) -> Iterator[Generator[R, None, None]]:
    """``items`` (from ``in_flight``), closed on leaving; on Ctrl-C ``backend`` is interrupted first, so the
    questions still in flight stop instead of finishing before the close returns. Other errors leave the
    backend as it is (an experiment's later cells share it)."""
    try:
        yield items
    except KeyboardInterrupt:
        interrupt(backend)
        raise
    finally:
        items.close()
