"""deliberation: multi-agent LLM deliberation with a learned meta-policy (MPDF) trained by SoftRankPO.

Implements Yang & Thomason, "Learning to Deliberate: Meta-policy Collaboration for Agentic LLMs with
Multi-agent Reinforcement Learning" (AAAI 2026, arXiv 2509.03817), its baselines and benchmarks.

The public seam. One question, no gold answer (``delib ask``)::

    from deliberation import deliberate
    result = deliberate("A shop sells pens at 3 for $2. How much do 12 pens cost?", method="mpdf",
                        backend="llamacpp", model="qwen2.5-coder-1.5b", answer_type="numeric", agents=3, rounds=2)
    result.answer, result.episode.turns, result.prompt_tokens, result.completion_tokens

A method over a benchmark or your own JSONL file (``delib run``), an experiment file (``delib experiment``)::

    run_benchmark("mpdf", "runs/mine", "data/mine.jsonl", answer_type="numeric", limit=20)  # -> Summary
    run_experiment("experiments/quick.toml", limit=2, report=write_report)

One method on one example::

    from deliberation import EngineConfig, load_benchmark, make_backend, run_method
    bench = load_benchmark("gsm8k")
    example = bench.load("test", limit=1)[0]
    episode = run_method("mpdf", example, make_backend("llamacpp"), benchmark="gsm8k",
                         engine=EngineConfig(agents=3, rounds=2))
    episode.final_answer, episode.correct, episode.turns

``load_policy(name_or_path)`` gives a trained meta-policy (a shipped name such as ``default`` or a
policy.pt) with ``decide(observation, rng)``. Names load lazily, so ``import deliberation`` stays light.
"""

from __future__ import annotations

from typing import Any

from deliberation.errors import DelibError
from deliberation.registry import imported

_LAZY = {
    "deliberate": "deliberation.runs.ask:deliberate",
    "DeliberationResult": "deliberation.runs.ask:DeliberationResult",
    "run_benchmark": "deliberation.runs.api:run_benchmark",
    "run_experiment": "deliberation.runs.api:run_experiment",
    "write_report": "deliberation.report.write:write_report",
    "Selection": "deliberation.config:Selection",
    "Summary": "deliberation.runs.directory:Summary",
    "run_method": "deliberation.methods:run_method",
    "METHODS": "deliberation.methods:METHODS",
    "make_backend": "deliberation.benchmarks.answers:make_backend",
    "load_benchmark": "deliberation.benchmarks:get",
    "load_policy": "deliberation.policy.checkpoint:load_learned",
    "EngineConfig": "deliberation.config:EngineConfig",
    "Example": "deliberation.types:Example",
    "Episode": "deliberation.types:Episode",
    "Action": "deliberation.actions:Action",
}

__all__ = ["DelibError", *_LAZY]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """The public names above, imported on first use (PEP 562)."""
    if name not in _LAZY:
        raise AttributeError(f"module 'deliberation' has no attribute {name!r}")
    return imported(_LAZY[name])
