"""Methods: MPDF and the baselines, all ``run(example, backend, cfg, rng) -> Episode`` through the same
engine, so answers, checking and token accounting are comparable. Registry ``METHODS``."""

from __future__ import annotations

from typing import Callable

from deliberation.registry import lookup
from deliberation.methods.base import MethodConfig

# name -> "module:function"
METHODS: dict[str, str] = {
    "cot": "deliberation.methods.cot:run",
    "self-consistency": "deliberation.methods.self_consistency:run",
    "debate": "deliberation.methods.debate:run",
    "reconcile": "deliberation.methods.reconcile:run",
    "dylan": "deliberation.methods.dylan:run",
    "mpdf": "deliberation.methods.mpdf:run",
    "always-persist": "deliberation.methods.heuristics:run_always_persist",
    "always-refine": "deliberation.methods.heuristics:run_always_refine",
    "always-concede": "deliberation.methods.heuristics:run_always_concede",
    "confidence-threshold": "deliberation.methods.heuristics:run_confidence_threshold",
    "agreement-threshold": "deliberation.methods.heuristics:run_agreement_threshold",
}


def get(name: str) -> Callable:
    """The ``run`` function of method ``name``."""
    return lookup(METHODS, name, "method")


__all__ = ["METHODS", "MethodConfig", "get"]
