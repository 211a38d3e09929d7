"""Benchmarks: one file each, registered in ``BENCHMARKS``; ``get(name)`` returns an instance."""

from __future__ import annotations

from deliberation.benchmarks.base import Benchmark
from deliberation.registry import lookup

# name -> "module:Class"
BENCHMARKS: dict[str, str] = {
    "gsm8k": "deliberation.benchmarks.gsm8k:GSM8K",
    "math": "deliberation.benchmarks.math:MATH",
    "aime24": "deliberation.benchmarks.aime:AIME24",
    "amc23": "deliberation.benchmarks.amc:AMC23",
    "mmlu": "deliberation.benchmarks.mmlu:MMLU",
    "humaneval": "deliberation.benchmarks.humaneval:HumanEval",
}


def get(name: str) -> Benchmark:
    """The benchmark registered under ``name``."""
    return lookup(BENCHMARKS, name, "benchmark")()


__all__ = ["BENCHMARKS", "Benchmark", "get"]
