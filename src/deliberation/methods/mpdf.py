"""MPDF (Yang & Thomason 2026): each round every agent's learned meta-policy picks PERSIST, REFINE or
CONCEDE from its meta-cognitive state and its peers'; the critic supplies introspective confidence.

The policy is the checkpoint at ``cfg.policy`` (a path, or the name of a checkpoint shipped in the package:
``default``, ``grpo``, ``qwen2.5-coder-1.5b``), else the one shipped in the package
(``deliberation/policy/checkpoints/default.pt``, docs/results/policy). Without either the fallback is the
confidence-threshold rule of ``heuristics`` (persist at P(Yes) >= cfg.confidence_threshold, else concede
to a more confident peer, else refine); the run's config records which policy ran, with the checkpoint's
content hash, so resuming a run after the checkpoint changed is refused rather than mixing two policies.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from deliberation.deliberation.engine import MetaPolicy, MethodSpec
from deliberation.deliberation.state import FEATURE_NAMES, FEATURE_VERSION, Observation
from deliberation.errors import DelibError
from deliberation.methods.base import MethodConfig, make_run
from deliberation.methods.heuristics import ConfidenceThreshold
from deliberation.models import sha256_file
from deliberation.types import Action

SHIPPED = Path(__file__).resolve().parent.parent / "policy" / "checkpoints"
SHIPPED_POLICY = SHIPPED / "default.pt"


@dataclass(frozen=True)
class LearnedPolicy:
    """Adapts a trained network to the engine: greedy at inference, epsilon-mixed for collection."""

    net: object  # deliberation.policy.network.MetaPolicy
    greedy: bool = True
    epsilon: float = 0.0

    def decide(self, obs: Observation, rng: np.random.Generator) -> tuple[tuple[Action, ...], tuple[float, ...]]:
        actions, logprobs = self.net.act(obs.own, obs.peers, rng, greedy=self.greedy, epsilon=self.epsilon)
        return tuple(actions), tuple(float(x) for x in logprobs)


@functools.lru_cache(maxsize=8)
def load_learned(path: str) -> LearnedPolicy:
    """Load (once per process) a checkpoint, refusing one built for other features."""
    from deliberation.policy.network import load_policy

    return LearnedPolicy(load_policy(checkpoint_path(path), FEATURE_NAMES, FEATURE_VERSION))


def checkpoint_path(policy: str) -> Path:
    """``policy`` as a file: a path as given, or a shipped checkpoint by name, so that an installed
    package's checkpoints are reachable without knowing where pip put them. A missing path is left for the
    loader's "not found" error; an unknown bare name lists the shipped ones."""
    path = Path(policy)
    if path.is_file() or path.suffix == ".pt" or len(path.parts) > 1:
        return path
    shipped = SHIPPED / f"{policy}.pt"
    if shipped.is_file():
        return shipped
    names = ", ".join(sorted(p.stem for p in SHIPPED.glob("*.pt")))
    raise DelibError(f"policy {policy!r} is neither a file nor a shipped checkpoint ({names}); pass the path "
                     "of a policy.pt or one of those names")


def policy_for(cfg: MethodConfig) -> MetaPolicy:
    """The policy MPDF runs with under ``cfg`` (see the module docstring)."""
    if cfg.policy is not None:
        return load_learned(str(cfg.policy))
    if SHIPPED_POLICY.exists():
        return load_learned(str(SHIPPED_POLICY))
    return ConfidenceThreshold(cfg.confidence_threshold)


def policy_name(cfg: MethodConfig) -> str:
    """What ``policy_for`` picks, for the run's config.json: the file and the hash of its contents."""
    if cfg.policy is not None:
        return f"{cfg.policy} {content_hash(checkpoint_path(cfg.policy))}"
    if SHIPPED_POLICY.exists():
        return f"shipped:default.pt {content_hash(SHIPPED_POLICY)}"
    return "rule:confidence-threshold"


def content_hash(path: Path) -> str:
    """``sha256:`` and the first 12 hex digits of the file's SHA-256 (enough to tell checkpoints apart)."""
    return "sha256:" + sha256_file(path)[:12]


run = make_run(lambda cfg: MethodSpec(name="mpdf", policy=policy_for(cfg), confidence=True))
