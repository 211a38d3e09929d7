"""Methods: MPDF and the baselines, each a ``Method`` entry (methods/base.py) run through the same engine,
so answers, checking and token accounting are comparable. Registry ``METHODS``: name -> module:attribute."""

from __future__ import annotations

from deliberation.methods.base import Method, MethodConfig
from deliberation.registry import lookup

METHODS: dict[str, str] = {
    "cot": "deliberation.methods.cot:METHOD",
    "self-consistency": "deliberation.methods.self_consistency:METHOD",
    "debate": "deliberation.methods.debate:METHOD",
    "reconcile": "deliberation.methods.reconcile:METHOD",
    "dylan": "deliberation.methods.dylan:METHOD",
    "mpdf": "deliberation.methods.mpdf:METHOD",
    "always-persist": "deliberation.methods.rules:ALWAYS_PERSIST",
    "always-refine": "deliberation.methods.rules:ALWAYS_REFINE",
    "always-concede": "deliberation.methods.rules:ALWAYS_CONCEDE",
    "confidence-threshold": "deliberation.methods.rules:CONFIDENCE_THRESHOLD",
    "agreement-threshold": "deliberation.methods.rules:AGREEMENT_THRESHOLD",
}


def get(name: str) -> Method:
    """The method registered under ``name``."""
    return lookup(METHODS, name, "method")


__all__ = ["METHODS", "Method", "MethodConfig", "get"]
