"""MPDF (Yang & Thomason 2026): each round every agent's learned meta-policy picks PERSIST, REFINE or
CONCEDE from its meta-cognitive state and its peers'; the critic supplies introspective confidence.

The policy is the checkpoint ``cfg.policy`` names (a path, or a shipped name: ``default``, ``grpo``,
``qwen2.5-coder-1.5b``), else the one shipped in the package (``policy/checkpoints/default.pt``,
docs/results/policy). Without either the fallback is the confidence-threshold rule (persist at P(Yes) >=
cfg.confidence_threshold, else concede to a more confident peer, else refine); the run's config records
which policy ran, with the checkpoint's content hash, so resuming a run after the checkpoint changed is
refused rather than mixing two policies.

MPDF in one place: the paper's algorithm step by step, and the one function or class that does each step
(the engine runs every round-loop method, so the steps live where every method shares them; a test checks
each name below exists):

1. Round 0, every agent answers alone: ``deliberation.engine.loop:initial_round``.
2. Introspective confidence, the critic's P(Yes) on each answer: ``deliberation.engine.confidence:critic_request``,
   ``deliberation.engine.confidence:read_confidence``, asked by ``deliberation.engine.loop:score_confidence``.
3. Each round, every agent's meta-cognitive state (decision schema, reasoning profile, confidence) and its
   peers': ``deliberation.engine.state:observe``, as network inputs ``deliberation.engine.features:arrays``.
4. The meta-policy picks PERSIST, REFINE or CONCEDE per agent: ``deliberation.policy.learned:TrainedPolicy``
   over ``deliberation.policy.network:MetaPolicyNet`` (``policy_for`` below picks the checkpoint).
5. The actions run, a round's calls in one batch: ``deliberation.engine.loop:act`` (CONCEDE's peer:
   ``deliberation.engine.loop:concede_target``), rounds until the team agrees: ``deliberation.engine.loop:run_rounds``.
6. The team's answer, a plurality vote: ``deliberation.engine.loop:final_vote`` over
   ``deliberation.engine.consensus:vote``; the whole episode: ``deliberation.engine.loop:run_episode``.
7. Training data, each decision with the rewards of its counterfactual actions:
   ``deliberation.rl.rollouts:collect_question``, rewards ``deliberation.rl.rollouts:rewards_for``.
8. SoftRankPO, advantages as reward ranks through the normal quantile: ``deliberation.rl.advantages:softrankpo``;
   the loss ``deliberation.rl.losses:policy_loss``; the updates ``deliberation.rl.trainer:train_pg``.
"""

from __future__ import annotations

from typing import Sequence

from deliberation.config import refuse_learned
from deliberation.engine.spec import MetaPolicy, MethodSpec
from deliberation.methods.base import Method, MethodConfig, MethodRecord
from deliberation.policy import shipped
from deliberation.policy.rules import ConfidenceThreshold
from deliberation.policy.split import trained_on
from deliberation.types import Example


def policy_for(cfg: MethodConfig) -> MetaPolicy:
    """The policy MPDF runs with under ``cfg`` (see the module docstring)."""
    from deliberation.policy.checkpoint import load_learned

    if cfg.policy is not None:
        return load_learned(str(cfg.policy))
    if shipped.SHIPPED_POLICY.exists():
        return load_learned(str(shipped.SHIPPED_POLICY))
    return ConfidenceThreshold(cfg.confidence_threshold)


def policy_name(cfg: MethodConfig) -> str:
    """What ``policy_for`` picks, for the run's config.json: the file and the hash of its contents."""
    if cfg.policy is not None:
        return f"{cfg.policy} {shipped.content_hash(shipped.checkpoint_path(cfg.policy))}"
    if shipped.SHIPPED_POLICY.exists():
        return f"shipped:default.pt {shipped.content_hash(shipped.SHIPPED_POLICY)}"
    return "rule:confidence-threshold"


def _record(cfg: MethodConfig) -> MethodRecord:
    return MethodRecord(policy_used=policy_name(cfg))


def _check(cfg: MethodConfig, examples: Sequence[Example]) -> None:
    """Refuse the questions the checkpoint trained on, as its split.json lists them (its score there would be
    in-sample); a checkpoint whose questions are unknown (no split.json beside it) is run as given."""
    trained = trained_on(shipped.checkpoint_path(cfg.policy) if cfg.policy is not None else shipped.SHIPPED_POLICY)
    if trained is not None:
        refuse_learned(examples, trained, f"the policy {cfg.policy or 'default'} was trained", "train it on others")


METHOD = Method(spec=lambda cfg: MethodSpec(name="mpdf", policy=policy_for(cfg), confidence=True,
                                            lazy_critic=cfg.lazy_critic),
                options=frozenset({"policy", "confidence_threshold", "lazy_critic"}), record=_record, check=_check,
                about="each round a learned policy picks PERSIST, REFINE or CONCEDE per agent (Yang & Thomason 2026)")
