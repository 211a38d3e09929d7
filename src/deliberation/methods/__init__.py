"""Methods: MPDF and the baselines, each a ``Method`` entry (methods/base.py) run through the same engine,
so answers, checking and token accounting are comparable. Registry ``METHODS``: name -> module:attribute."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from deliberation.backends.base import Backend
from deliberation.config import EngineConfig
from deliberation.engine.loop import example_rng
from deliberation.errors import DelibError
from deliberation.methods.base import Method, MethodConfig
from deliberation.policy.rules import FIXED_RULES
from deliberation.methods.options import MethodOptions
from deliberation.registry import Registry
from deliberation.types import Episode, Example

METHODS: Registry[Method] = Registry("method", {
    "cot": "deliberation.methods.cot:METHOD",
    "self-consistency": "deliberation.methods.self_consistency:METHOD",
    "adaptive-consistency": "deliberation.methods.adaptive_consistency:METHOD",
    "early-stopping-sc": "deliberation.methods.allocate:ESC",
    "cisc": "deliberation.methods.cisc:CRITIC",
    "cisc-logprob": "deliberation.methods.cisc:LOGPROB",
    "php": "deliberation.methods.php:METHOD",
    "gptswarm": "deliberation.methods.graphs:GPTSWARM",
    "agentprune": "deliberation.methods.graphs:AGENTPRUNE",
    "aflow": "deliberation.methods.aflow:SEARCHED",
    "aflow-gsm8k": "deliberation.methods.aflow:GSM8K",
    "aflow-math": "deliberation.methods.aflow:MATH",
    "debate": "deliberation.methods.debate:METHOD",
    "reconcile": "deliberation.methods.reconcile:METHOD",
    "dylan": "deliberation.methods.dylan:METHOD",
    "mpdf": "deliberation.methods.mpdf:METHOD",
    "mpdf-allocate": "deliberation.methods.allocate:ALLOCATE",
    **{name: f"deliberation.methods.rules:RULE_METHODS[{name}]" for name in FIXED_RULES},  # the fixed rules
    "oracle": "deliberation.methods.oracle:METHOD",
})


def get(name: str) -> Method:
    """The method registered under ``name``."""
    return METHODS.resolve(name)


def described() -> str:
    """Every method and what it does, a line each (``Method.about``): the list ``delib run --help`` shows."""
    width = max(map(len, METHODS))
    return "\n".join(f"  {name:<{width}}  {get(name).about}" for name in METHODS)


def unread(given: Iterable[str], names: Sequence[str]) -> str | None:
    """The first of the ``given`` options that none of the methods ``names`` reads, else None: such an
    option is refused, never silently ignored."""
    return next((option for option in given if not any(option in get(n).options for n in names)), None)


def taking(option: str) -> list[str]:
    """The methods that read ``option``, for the message that refuses it elsewhere."""
    return [name for name in METHODS if option in get(name).options]


def refuse_unread(given: Iterable[str], names: Sequence[str]) -> None:
    """A DelibError for the first ``given`` option that none of the methods ``names`` reads."""
    option = unread(given, names)
    if option is not None:
        raise DelibError(f"--{option.replace('_', '-')} means nothing to method{'s' * (len(names) > 1)} "
                         f"{', '.join(names)}; drop it (it applies to: {', '.join(taking(option))})")


def run_method(method: str, example: Example, backend: Backend, benchmark: str = "gsm8k",
               engine: EngineConfig | None = None, **method_options: Any) -> Episode:
    """One episode of ``method`` on ``example`` (a question of ``benchmark``, whose scorer and answer format
    apply), exactly as ``delib run`` computes it for that example and ``engine.seed``. ``method_options``:
    method options by name (the fields of ``MethodOptions``, methods/options.py: ``policy=``, ...). The method's
    own refusals apply as in ``delib run`` (its ``check``: e.g. a question an optimised graph or allocator was
    trained on, code that cannot run isolated); ``delib run``'s checks of the team and the context window do
    not."""
    chosen = get(method)
    cfg = MethodConfig(benchmark, engine or EngineConfig(), **method_options)
    refuse_unread(cfg.given(), [method])  # as delib run refuses it, never ignored
    chosen.check(cfg, [example])
    return chosen.run(example, backend, cfg, example_rng(cfg.engine.seed, example.id))


__all__ = ["METHODS", "Method", "MethodConfig", "MethodOptions", "described", "get", "refuse_unread", "run_method",
           "taking", "unread"]
