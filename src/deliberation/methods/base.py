"""What every method shares: its configuration and the one way an episode is run.

A method is a ``MethodSpec`` factory (see ``deliberation.deliberation.engine``); its module exposes
``spec(cfg)`` and the common signature ``run(example, backend, cfg, rng) -> Episode``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from deliberation.backends.base import Backend
from deliberation.benchmarks import get as get_benchmark
from deliberation.config import EngineConfig
from deliberation.deliberation.engine import Context, MethodSpec, run_episode
from deliberation.types import Episode, Example


@dataclass(frozen=True)
class MethodConfig:
    """The settings a method needs besides the example, backend and rng."""

    benchmark: str = "gsm8k"
    engine: EngineConfig = field(default_factory=EngineConfig)
    policy: str | None = None
    """mpdf: path of a policy checkpoint (default: the checkpoint shipped in the package)."""
    confidence_threshold: float = 0.7
    """confidence-threshold rule: persist at or above this critic P(Yes)."""


def run_spec(spec: MethodSpec, example: Example, backend: Backend, cfg: MethodConfig, rng: np.random.Generator,
             engine: EngineConfig | None = None) -> Episode:
    """Run one episode of ``spec`` (with ``engine`` overriding cfg.engine, e.g. cot's single agent)."""
    bench = get_benchmark(cfg.benchmark)
    ctx = Context(example, bench.format_question(example), backend, bench, engine or cfg.engine, spec)
    return run_episode(ctx, rng)


def make_run(spec_of: Callable[[MethodConfig], MethodSpec]) -> Callable[..., Episode]:
    """A ``run(example, backend, cfg, rng)`` for a spec built from the method config."""

    def run(example: Example, backend: Backend, cfg: MethodConfig, rng: np.random.Generator) -> Episode:
        return run_spec(spec_of(cfg), example, backend, cfg, rng)

    return run
