"""Self-consistency (Wang et al. 2023): the majority answer of k independent samples (k = --agents).

Its samples are exactly the round-0 answers of every other method (same prompts and seeds), so the
response cache serves them once across methods.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from deliberation.backends.base import Backend
from deliberation.deliberation.engine import MethodSpec
from deliberation.methods.base import MethodConfig, run_spec
from deliberation.types import Episode, Example

SPEC = MethodSpec(name="self-consistency", policy=None)


def run(example: Example, backend: Backend, cfg: MethodConfig, rng: np.random.Generator) -> Episode:
    """k samples, plurality vote."""
    return run_spec(SPEC, example, backend, cfg, rng, replace(cfg.engine, rounds=0))
