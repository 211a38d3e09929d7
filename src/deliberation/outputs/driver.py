"""A resumable per-question job, driven one way by every command that runs a list of questions into an
output it can resume: ``delib run`` (runs/runner.py, and its Ray form runs/distributed.py, which shares the
recording half), ``delib collect`` (rl/collect.py) and ``delib tree`` (trees/build.py).

``run_job`` makes the backend, opens the output as its one writer, skips the questions recorded there
already, keeps the others in flight (``concurrent.in_flight``), records each result durably as it finishes
behind a progress bar, and closes the output, the benchmarks and the backend, in that order. Ctrl-C keeps
every recorded result and stops the questions in flight (``concurrent.stopping``): a rerun does only what is
missing. A new resumable job is its hooks (a ``QuestionJob`` and the ``Ledger`` its output opens to) only.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Callable, Collection, Generic, Iterable, Mapping, Sequence, TypeVar

from deliberation import benchmarks
from deliberation.backends.base import Backend
from deliberation.backends.concurrent import in_flight, stopping
from deliberation.types import Example

LOG = logging.getLogger("deliberation")
R = TypeVar("R")  # one question's result
T = TypeVar("T")  # what a whole job returns


@dataclass(frozen=True)
class Ledger(Generic[R, T]):
    """A job's output, opened by this process as its one writer: what it holds, how it grows, what it comes
    to."""

    done: frozenset[str]
    """The ids of the questions it held when opened: they are skipped."""
    record: Callable[[Example, R], None]
    """Add one question's result durably: it is kept whatever happens next (Ctrl-C, a kill)."""
    finish: Callable[[], T]
    """What the job returns, computed while the output is still held (``delib run`` writes its summary)."""
    backend: Backend | None = None
    """What the questions run on when it is not the job's backend itself (a tree build records the
    completions through a wrapper around it)."""


@dataclass(frozen=True)
class QuestionJob(Generic[R, T]):
    """What sets one resumable per-question job apart from another; ``run_job`` does the rest."""

    examples: Sequence[Example]
    """The questions, in order."""
    backend: Callable[[], AbstractContextManager[Backend]]
    """Makes the backend (a model loads here, after the caller's checks); leaving the context closes it
    (``contextlib.closing``), or not (``contextlib.nullcontext`` for a backend the caller shares)."""
    output: Callable[[Backend], AbstractContextManager[Ledger[R, T]]]
    """Opens the output for that backend (a manifest may name its model), locked until the context is left."""
    run: Callable[[Example, Backend], R]
    """One question; with ``concurrency`` above 1 called from that many threads on one shared backend."""
    concurrency: int = 1
    tally: Callable[[R], Mapping[str, str]] | None = None
    """The progress bar's postfix after each recorded result (a running tally it keeps), or None."""


def run_job(job: QuestionJob[R, T], progress: bool = True) -> T:
    """Run the questions of ``job`` its output lacks into it; what the output's ``finish`` returns."""
    with job.backend() as backend:
        try:
            with job.output(backend) as ledger:
                runs_on = backend if ledger.backend is None else ledger.backend
                todo = pending(job.examples, ledger.done)
                answers = in_flight(lambda ex, b: (ex, job.run(ex, b)), todo, runs_on, job.concurrency)
                with stopping(answers, runs_on) as finished:
                    record_all(ledger, finished, len(todo), job.tally, progress)
                return ledger.finish()
        finally:
            benchmarks.close_all()


def note_unasked(output: object, unasked: int, reads: str) -> None:
    """Say that ``output`` holds ``unasked`` questions the command did not ask for (an earlier, larger --limit
    or another selection), and what ``reads`` them all ("its summary counts them too"): a rerun for fewer
    questions neither removes them nor leaves them out silently."""
    if unasked:
        LOG.warning("delib: note: %s also holds %d questions this command did not ask for (an earlier, larger "
                    "--limit or selection); %s", output, unasked, reads)


def pending(examples: Iterable[Example], done: Collection[str]) -> list[Example]:
    """The questions not ``done`` yet, in their order."""
    return [ex for ex in examples if ex.id not in done]


def record_all(ledger: Ledger[R, Any], answers: Iterable[tuple[Example, R]], total: int,
               tally: Callable[[R], Mapping[str, str]] | None, progress: bool) -> None:
    """Record each question's result as it comes, behind a bar counting up to ``total`` questions. A
    question is recorded once: a later result for it (a Ray task run again after its actor died) is dropped."""
    from tqdm import tqdm

    recorded = set(ledger.done)
    with tqdm(total=total, disable=not progress, unit="q", dynamic_ncols=True) as bar:
        for example, result in answers:
            if example.id in recorded:
                continue
            recorded.add(example.id)
            ledger.record(example, result)
            if tally is not None:
                bar.set_postfix(tally(result))
            bar.update()
