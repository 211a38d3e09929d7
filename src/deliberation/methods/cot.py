"""Single-agent chain of thought (Wei et al. 2022): one agent, one answer, no deliberation."""

from __future__ import annotations

from dataclasses import replace

from deliberation.engine.spec import MethodSpec
from deliberation.methods.base import fixed

METHOD = fixed(MethodSpec(name="cot", policy=None), engine=lambda e: replace(e, agents=1, rounds=0),
               about="one agent, one chain-of-thought answer (Wei et al. 2022)",
               pinned_hints=(("agents", "several samples: --method self-consistency --agents N"),))
