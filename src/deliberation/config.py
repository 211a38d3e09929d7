"""Typed configuration of a deliberation run, validated on construction with actionable messages.

Training configuration lives beside the trainer (``deliberation.rl.config.TrainConfig``).
"""

from __future__ import annotations

from dataclasses import dataclass

from deliberation.errors import DelibError, require_at_least


@dataclass(frozen=True)
class EngineConfig:
    """How a team deliberates on one question. Every method reads the fields it needs."""

    agents: int = 3
    """Number of agents N (self-consistency: number of samples; cot uses 1)."""
    rounds: int = 2
    """Deliberation rounds R after the independent round 0."""
    temperature: float = 0.7
    """Sampling temperature of every answer (critic calls are greedy)."""
    max_tokens: int = 1024
    """Generation limit per answer. DESIGN.md: 400 cut off 20-24% of GSM8K turns with Qwen 1.5B."""
    seed: int = 0
    """Run seed: request seeds derive from (seed, example, agent, round) so runs are reproducible and
    round-0 requests are identical across methods (and served once by the response cache)."""
    early_stop: bool = True
    """Stop deliberating once the method's consensus rule holds (all agents agree, by default)."""
    verbal_confidence: bool = False
    """Ask for a 0-100 confidence instead of reading P(Yes) from logprobs (forced when the backend has
    no logprobs)."""

    def __post_init__(self) -> None:
        require_at_least("--agents", self.agents)
        if self.rounds < 0:
            raise DelibError(f"--rounds must be 0 or more (got {self.rounds})")
        if self.temperature < 0:
            raise DelibError(f"--temperature must be >= 0 (got {self.temperature})")
        require_at_least("--max-tokens", self.max_tokens)
