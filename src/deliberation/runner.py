"""Run one method on one benchmark split into a run directory, resumably, with a progress bar.

Everything that can be wrong with the request (method, benchmark, split, policy file, engine settings)
is checked before the directory is created, so bad input leaves nothing behind.
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Iterable, Iterator, Sequence, TypeVar

import numpy as np

from deliberation import benchmarks, methods
from deliberation.backends import backend_class, make_backend
from deliberation.backends.base import Backend, interrupt
from deliberation.backends.coalesce import CoalescingBackend
from deliberation.config import EngineConfig
from deliberation.errors import require_at_least
from deliberation.methods.base import MethodConfig
from deliberation.runs import RunDir, Summary, summarize
from deliberation.types import Episode, Example, to_json


@dataclass(frozen=True)
class RunSpec:
    """One cell of an evaluation: what runs, on what, with which backend; saved as config.json."""

    method: str
    benchmark: str = "gsm8k"
    split: str = "test"
    limit: int | None = None
    backend: str = "llamacpp"
    backend_options: dict[str, Any] = field(default_factory=dict)
    cache: str | None = None
    engine: EngineConfig = field(default_factory=EngineConfig)
    policy: str | None = None
    data_dir: str | None = None
    command: str = ""
    concurrency: int = 1
    """Questions in flight at once, their LLM requests merged into shared batches (backends/coalesce.py)."""

    def __post_init__(self) -> None:
        check_counts(self.concurrency, self.limit)

    def method_config(self) -> MethodConfig:
        return MethodConfig(benchmark=self.benchmark, engine=self.engine, policy=self.policy)


def check_counts(concurrency: int, limit: int | None) -> None:
    """The checks every spec that runs questions shares (RunSpec, rl.collect.CollectSpec)."""
    require_at_least("concurrency", concurrency)
    if limit is not None:
        require_at_least("limit", limit)


def validate(spec: RunSpec) -> tuple[Callable, list[Example]]:
    """The method's run function and the examples, or a DelibError before anything is written."""
    run_fn = methods.get(spec.method)
    bench = benchmarks.get(spec.benchmark)
    backend_class(spec.backend)
    examples = bench.load(spec.split, limit=spec.limit, data_dir=spec.data_dir)
    if spec.method == "mpdf":
        from deliberation.methods.mpdf import policy_for

        policy_for(spec.method_config())  # a missing or mismatched checkpoint fails here
    return run_fn, examples


def example_rng(seed: int, example_id: str) -> np.random.Generator:
    """The policy's random stream for one example: independent of order, so resumed runs match."""
    return np.random.default_rng([seed, int(hashlib.sha256(example_id.encode()).hexdigest()[:8], 16)])


def config_record(spec: RunSpec) -> dict[str, Any]:
    """config.json: the spec, plus which policy mpdf actually ran."""
    record = to_json(spec)
    if spec.method == "mpdf":
        from deliberation.methods.mpdf import policy_name

        record["policy_used"] = policy_name(spec.method_config())
    return record


def run_examples(run_fn: Callable, examples: Iterable[Example], backend: Backend,
                 spec: RunSpec) -> Generator[Episode, None, None]:
    """Episodes of ``examples`` (the unit of work shared by local and distributed runs): one by one, or
    ``spec.concurrency`` at a time in the order they finish."""
    cfg = spec.method_config()
    return in_flight(lambda ex, b: run_fn(ex, b, cfg, example_rng(spec.engine.seed, ex.id)), list(examples),
                     backend, spec.concurrency)


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


def execute(spec: RunSpec, out: str, progress: bool = True, backend: Backend | None = None) -> Summary:
    """Run ``spec`` into ``out``, skipping examples already finished there; return the summary."""
    run_fn, examples = validate(spec)
    run_dir = RunDir.open(out, config_record(spec))
    done = run_dir.finished_ids()
    todo = [ex for ex in examples if ex.id not in done]
    if not todo:  # finished: no model to load, no empty progress bar
        return finish(run_dir, spec, [ex.id for ex in examples])
    run_dir.clear_summary()  # an extension killed midway must not keep reporting the old summary
    own_backend = backend is None
    backend = backend or make_backend(spec.backend, cache=spec.cache, **spec.backend_options)
    try:
        with stopping(run_examples(run_fn, todo, backend, spec), backend) as episodes:
            drive(run_dir, episodes, len(todo), progress)
    finally:
        if own_backend:
            backend.close()
    return finish(run_dir, spec, [ex.id for ex in examples])


def drive(run_dir: RunDir, episodes: Iterable[Episode], total: int, progress: bool) -> None:
    """Append episodes as they finish, with a bar showing accuracy so far and tokens."""
    from tqdm import tqdm

    right = tokens = done = 0
    with tqdm(total=total, disable=not progress, unit="q", dynamic_ncols=True) as bar:
        for ep in episodes:
            run_dir.append(ep)
            done, right, tokens = done + 1, right + ep.correct, tokens + ep.prompt_tokens + ep.completion_tokens
            bar.set_postfix(acc=f"{right / done:.3f}", tok_per_q=f"{tokens / done:.0f}")
            bar.update()


def finish(run_dir: RunDir, spec: RunSpec, order: list[str]) -> Summary:
    """Write summary.json over the run's episodes of the requested examples, in dataset order."""
    wanted = {eid: i for i, eid in enumerate(order)}
    first = {e.example_id: e for e in reversed(run_dir.episodes())}  # an id twice (two writers): its first
    episodes = sorted((e for eid, e in first.items() if eid in wanted), key=lambda e: wanted[e.example_id])
    summary = summarize(episodes, spec.method, spec.benchmark, spec.split)
    run_dir.write_summary(summary)
    return summary
