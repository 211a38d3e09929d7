"""Timing helpers of ``delib bench``: a backend wrapper that adds up the time spent inside the backend, a
zero-cost replay backend, a timed ``runner.execute`` into a throw-away run directory, and cProfile hotspots.

Why subtract backend time: the scripted simulator parses prompts and scores answers itself; that work is
the simulator's, not the framework's, so framework overhead = wall - time inside ``generate``.
"""

from __future__ import annotations

import cProfile
import pstats
import tempfile
import time
from pathlib import Path
from typing import Sequence

from deliberation.backends.base import Backend
from deliberation.perf.results import Hotspot
from deliberation.errors import DelibError
from deliberation.runs.runner import RunSpec, execute
from deliberation.types import Completion, GenerationRequest


class TimedBackend:
    """Forwards to ``inner``, adding up the seconds spent inside ``generate`` and the requests sent; with
    ``record`` it also keeps every request's completion, in order (for ``replay``). ``close`` closes
    ``inner`` only when ``owns``: a borrowed backend stays usable for the next measurement."""

    def __init__(self, inner: Backend, record: bool = False, owns: bool = False) -> None:
        self.inner, self.record, self.owns = inner, record, owns
        self.name, self.model, self.supports_logprobs = inner.name, inner.model, inner.supports_logprobs
        self.seconds = 0.0
        self.requests = 0
        self.log: dict[GenerationRequest, Completion] = {}

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        start = time.perf_counter()
        out = self.inner.generate(requests)
        self.seconds += time.perf_counter() - start
        self.requests += len(requests)
        if self.record:
            self.log.update(zip(requests, out))
        return out

    def replay(self) -> ReplayBackend:
        """A zero-cost backend answering the recorded requests."""
        return ReplayBackend(dict(self.log), self.name, self.model, self.supports_logprobs)

    def close(self) -> None:
        if self.owns:
            self.inner.close()


class ReplayBackend:
    """Answers from recorded completions: a backend that costs one dict lookup per request."""

    def __init__(self, log: dict[GenerationRequest, Completion], name: str, model: str, logprobs: bool) -> None:
        self.log, self.name, self.model, self.supports_logprobs = log, name, model, logprobs

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        missing = sum(r not in self.log for r in requests)
        if missing:
            raise DelibError(f"replay: {missing} request(s) were not recorded; the run is not deterministic")
        return [self.log[r] for r in requests]

    def close(self) -> None:
        """Nothing to release."""


def timed_execute(spec: RunSpec, backend: Backend) -> float:
    """Wall seconds of ``runner.execute(spec)`` into a fresh temporary run directory."""
    with tempfile.TemporaryDirectory(prefix="delib-bench-") as out:
        start = time.perf_counter()
        execute(spec, out, progress=False, backend=backend)
        return time.perf_counter() - start


def profile_run(spec: RunSpec, backend: Backend, top: int = 15) -> tuple[Hotspot, ...]:
    """cProfile of one ``timed_execute``: the ``top`` functions by own time."""
    profiler = cProfile.Profile()
    profiler.runcall(timed_execute, spec, backend)
    table = pstats.Stats(profiler).stats  # type: ignore[attr-defined]  # {func: (cc, nc, tt, ct, callers)}
    rows = sorted(table.items(), key=lambda kv: -kv[1][2])[:top]
    return tuple(Hotspot(_where(func), int(nc), float(tt), float(ct)) for func, (_, nc, tt, ct, _) in rows)


def _where(func: tuple[str, int, str]) -> str:
    """'folder/file.py:line(name)' without the machine's path prefix ('builtin' for C functions)."""
    filename, line, name = func
    short = "builtin" if filename == "~" else "/".join(Path(filename).parts[-2:])
    return f"{short}:{line}({name})"
