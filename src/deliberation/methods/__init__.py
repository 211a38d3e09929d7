"""Methods: MPDF and the baselines, each a ``Method`` entry (methods/base.py) run through the same engine,
so answers, checking and token accounting are comparable. Registry ``METHODS``: name -> module:attribute."""

from __future__ import annotations

from deliberation.backends.base import Backend
from deliberation.config import EngineConfig
from deliberation.engine.loop import example_rng
from deliberation.methods.base import Method, MethodConfig
from deliberation.registry import lookup
from deliberation.types import Episode, Example

METHODS: dict[str, str] = {
    "cot": "deliberation.methods.cot:METHOD",
    "self-consistency": "deliberation.methods.self_consistency:METHOD",
    "adaptive-consistency": "deliberation.methods.adaptive_consistency:METHOD",
    "cisc": "deliberation.methods.cisc:CRITIC",
    "cisc-logprob": "deliberation.methods.cisc:LOGPROB",
    "debate": "deliberation.methods.debate:METHOD",
    "reconcile": "deliberation.methods.reconcile:METHOD",
    "dylan": "deliberation.methods.dylan:METHOD",
    "mpdf": "deliberation.methods.mpdf:METHOD",
    "always-persist": "deliberation.methods.rules:ALWAYS_PERSIST",
    "always-refine": "deliberation.methods.rules:ALWAYS_REFINE",
    "always-concede": "deliberation.methods.rules:ALWAYS_CONCEDE",
    "confidence-threshold": "deliberation.methods.rules:CONFIDENCE_THRESHOLD",
    "agreement-threshold": "deliberation.methods.rules:AGREEMENT_THRESHOLD",
    "always-resample": "deliberation.methods.rules:ALWAYS_RESAMPLE",
    "agreement-resample": "deliberation.methods.rules:AGREEMENT_RESAMPLE",
    "agreement-then-confidence": "deliberation.methods.rules:AGREEMENT_THEN_CONFIDENCE",
    "oracle": "deliberation.methods.oracle:METHOD",
}


def get(name: str) -> Method:
    """The method registered under ``name``."""
    return lookup(METHODS, name, "method")


def run_method(method: str, example: Example, backend: Backend, benchmark: str = "gsm8k",
               engine: EngineConfig | None = None, policy: str | None = None,
               confidence_threshold: float = 0.7) -> Episode:
    """One episode of ``method`` on ``example`` (a question of ``benchmark``, whose scorer and answer format
    apply), exactly as ``delib run`` computes it for that example and ``engine.seed``."""
    cfg = MethodConfig(benchmark, engine or EngineConfig(), policy, confidence_threshold)
    return get(method).run(example, backend, cfg, example_rng(cfg.engine.seed, example.id))


__all__ = ["METHODS", "Method", "MethodConfig", "get", "run_method"]
