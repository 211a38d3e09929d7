"""Benchmarks: one file each, registered in ``BENCHMARKS``; own JSONL data scored like one of them
(``own.py``, answer types in ``own.ANSWER_TYPES``); helpers (numeric answers, arithmetic, data sources, the
code sandbox) live in ``helpers/``.

``get(name)`` returns one shared instance per process: a benchmark may hold a resource (MATH's
math-verify worker process), which is then started once, not once per episode, and stopped by
``close_all`` (called at exit, and by a finished run or collection).
"""

from __future__ import annotations

import atexit
import threading

from deliberation.benchmarks.base import Benchmark
from deliberation.registry import Registry

# name -> "module:Class"
BENCHMARKS: Registry[type[Benchmark]] = Registry("benchmark", {
    "gsm8k": "deliberation.benchmarks.gsm8k:GSM8K",
    "math": "deliberation.benchmarks.math:MATH",
    "aime24": "deliberation.benchmarks.aime:AIME24",
    "amc23": "deliberation.benchmarks.amc:AMC23",
    "mmlu": "deliberation.benchmarks.mmlu:MMLU",
    "humaneval": "deliberation.benchmarks.humaneval:HumanEval",
})
_OPEN: dict[str, Benchmark] = {}
_LOCK = threading.Lock()


def get(name: str) -> Benchmark:
    """The benchmark registered under ``name``, or own data (``numeric:data/q.jsonl``, ``ask:text``: see
    ``own.py``); the process's one instance of it."""
    with _LOCK:
        if name not in _OPEN:
            _OPEN[name] = _make(name)
        return _OPEN[name]


def _make(name: str) -> Benchmark:
    from deliberation.benchmarks import own

    parsed = own.parse_name(name)
    if parsed is not None:
        return own.OwnData(parsed.answer_type, parsed.path)
    return BENCHMARKS.resolve(name)()


def opened() -> list[Benchmark]:
    """The benchmarks this process has opened, in order (the scripted simulator finds own data among them)."""
    with _LOCK:
        return list(_OPEN.values())


def close_all() -> None:
    """Release every benchmark's resources; a later ``get`` starts them again when needed."""
    with _LOCK:
        for bench in _OPEN.values():
            bench.close()


atexit.register(close_all)

__all__ = ["BENCHMARKS", "Benchmark", "close_all", "get", "opened"]
