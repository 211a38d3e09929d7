"""Single-agent chain of thought (Wei et al. 2022): one agent, one answer, no deliberation."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from deliberation.backends.base import Backend
from deliberation.deliberation.engine import MethodSpec
from deliberation.methods.base import MethodConfig, run_spec
from deliberation.types import Episode, Example

SPEC = MethodSpec(name="cot", policy=None)


def run(example: Example, backend: Backend, cfg: MethodConfig, rng: np.random.Generator) -> Episode:
    """One agent answers once."""
    return run_spec(SPEC, example, backend, cfg, rng, replace(cfg.engine, agents=1, rounds=0))
