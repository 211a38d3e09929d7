"""The resumable per-question job driver (outputs/driver.py): a new job is its hooks only, and gets resuming,
questions in flight and Ctrl-C handling from ``run_job``, as ``delib run``, ``collect`` and ``tree`` do."""

from __future__ import annotations

import threading
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence

import pytest

from deliberation.backends.base import Backend
from deliberation.errors import Interrupted
from deliberation.outputs.driver import Ledger, QuestionJob, run_job
from deliberation.types import Completion, Example, GenerationRequest, Message


class Idle:
    """A backend whose calls last until it is interrupted (a long decode), then fail as llama.cpp's do."""

    name = model = "idle"
    supports_logprobs = False

    def __init__(self) -> None:
        self.interrupted = threading.Event()
        self.closed = False

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        if not self.interrupted.wait(timeout=60):  # a guard against a hang, not a timing
            raise AssertionError("the call in flight was never interrupted")
        raise Interrupted()

    def interrupt(self) -> None:
        self.interrupted.set()

    def close(self) -> None:
        self.closed = True


def length_job(path: Path, examples: Sequence[Example], backend: Idle, concurrency: int = 1,
               run: Callable[[Example, Backend], int] | None = None) -> QuestionJob[int, int]:
    """A whole new resumable job: each question's length, a line "id length" per question in ``path``;
    it returns the number of lines. ``run`` replaces the length (to watch or stop the questions)."""

    @contextmanager
    def lines(_: Backend) -> Iterator[Ledger[int, int]]:
        done = frozenset(line.split()[0] for line in path.read_text().splitlines()) if path.exists() else frozenset()
        with open(path, "a") as f:
            def record(example: Example, length: int) -> None:
                f.write(f"{example.id} {length}\n")
                f.flush()

            yield Ledger(done, record, lambda: len(path.read_text().splitlines()))

    return QuestionJob(examples, lambda: closing(backend), lines, run or (lambda ex, _: len(ex.question)), concurrency)


QUESTIONS = [Example(id, "x" * n, "") for id, n in zip("abcd", (1, 2, 3, 4))]


def test_a_second_call_runs_only_the_questions_the_first_did_not_record(tmp_path):
    path, asked = tmp_path / "lengths.txt", []

    def measured(example: Example, _: Backend) -> int:
        asked.append(example.id)
        return len(example.question)

    first = Idle()
    assert run_job(length_job(path, QUESTIONS[:2], first, run=measured), progress=False) == 2
    assert asked == ["a", "b"] and first.closed
    assert run_job(length_job(path, QUESTIONS, Idle(), run=measured), progress=False) == 4
    assert asked == ["a", "b", "c", "d"]
    assert path.read_text().splitlines() == ["a 1", "b 2", "c 3", "d 4"]


def test_questions_run_in_flight_together(tmp_path):
    """Two questions must be running at once to pass the barrier: one at a time, it breaks and the job fails."""
    together = threading.Barrier(2, timeout=60)  # a guard against a hang, not a timing

    def met(example: Example, _: Backend) -> int:
        together.wait()
        return len(example.question)

    assert run_job(length_job(tmp_path / "lengths.txt", QUESTIONS, Idle(), concurrency=2, run=met),
                   progress=False) == 4
    assert sorted((tmp_path / "lengths.txt").read_text().splitlines()) == ["a 1", "b 2", "c 3", "d 4"]


def test_ctrl_c_keeps_the_recorded_results_and_stops_the_questions_in_flight(tmp_path):
    """a finishes; b waits on the backend; Ctrl-C comes while c runs (on a's thread, so after a finished):
    a is kept, b's call is interrupted, nothing else is recorded, and a rerun does the rest."""
    path, backend, stopped = tmp_path / "lengths.txt", Idle(), []

    def interrupted_at_c(example: Example, shared: Backend) -> int:
        if example.id == "b":
            try:
                shared.generate([GenerationRequest((Message("user", example.question),), max_tokens=8)])
            except Interrupted:
                stopped.append(example.id)
                raise
        if example.id == "c":
            raise KeyboardInterrupt
        return len(example.question)

    with pytest.raises(KeyboardInterrupt):
        run_job(length_job(path, QUESTIONS, backend, concurrency=2, run=interrupted_at_c), progress=False)
    assert path.read_text().splitlines() == ["a 1"]
    assert stopped == ["b"] and backend.interrupted.is_set() and backend.closed
    assert run_job(length_job(path, QUESTIONS, Idle()), progress=False) == 4
    assert path.read_text().splitlines() == ["a 1", "b 2", "c 3", "d 4"]
