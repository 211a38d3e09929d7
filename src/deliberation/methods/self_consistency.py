"""Self-consistency (Wang et al. 2023): the majority answer of k independent samples (k = --agents).

Its samples are exactly the round-0 answers of every other method (same prompts and seeds), so the
response cache serves them once across methods.
"""

from __future__ import annotations

from deliberation.engine.spec import MethodSpec
from deliberation.methods.base import fixed, samples_only

SPEC = MethodSpec(name="self-consistency", policy=None)
METHOD = fixed(SPEC, engine=samples_only,
               about="the majority of --agents independent samples (Wang et al. 2023)")
