"""deliberation: multi-agent LLM deliberation with a learned meta-policy (MPDF) trained by SoftRankPO.

Implements Yang & Thomason, "Learning to Deliberate: Meta-policy Collaboration for Agentic LLMs with
Multi-agent Reinforcement Learning" (AAAI 2026, arXiv 2509.03817), its baselines and benchmarks.
"""

from deliberation.errors import DelibError

__all__ = ["DelibError"]
__version__ = "0.1.0"
