"""Training the meta-policy on offline rollouts: SFT on oracle labels, then policy-gradient fine-tuning.

docs/design.md, section Training: ``train_sft`` fits the reference policy by cross-entropy to oracle
labels; ``train_pg`` fine-tunes it with the algorithm of ``TrainConfig.algo`` (SoftRankPO by default),
KL-regularized to the reference. Both read top to bottom: prepare data -> build or copy the network ->
one shared optimization loop (Adam, seeded mini-batches) -> per-step metrics on held-out questions.
Nothing here writes files except ``write_training_outputs``, which the CLI calls once training succeeded.
"""

from __future__ import annotations

import copy
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import torch
from torch import Tensor

from deliberation.errors import DelibError, make_folder, write_error
from deliberation.outputs.kinds import METRICS
from deliberation.policy.checkpoint import save_policy
from deliberation.policy.network import MetaPolicyNet
from deliberation.rl.config import CHECKPOINT_NAME, TrainConfig
from deliberation.rl.data import DecisionBatch, first_samples, split_by_example, tensorize
from deliberation.rl.held_out import held_out
from deliberation.rl.held_out_file import HeldOutScores, write_held_out
from deliberation.rl.algorithms import ALGORITHMS
from deliberation.rl.losses import entropy, policy_loss
from deliberation.rl.sft import oracle_labels, sft_loss
from deliberation.policy.split import Split, write_split
from deliberation.types import Decision, strict_json, to_json



@dataclass(frozen=True)
class StepMetrics:
    """One optimizer step. Validation fields are None when no question is held out (val_fraction 0)."""

    stage: str  # "sft" or the policy-gradient algo name
    step: int  # 1-based optimizer step
    epoch: int  # 0-based pass over the training decisions
    loss: float  # total loss of the step's mini-batch
    kl: float  # KL(pi || pi_ref) on the mini-batch (0 without a reference)
    entropy: float  # mean policy entropy on the mini-batch
    mean_advantage: float | None  # mean advantage of the mini-batch (None for SFT)
    val_accuracy: float | None  # share of held-out decisions whose greedy action earns the best reward
    val_reward: float | None  # mean counterfactual (unscaled) reward of the greedy action, held out
    val_actions: tuple[float, ...] | None  # greedy action shares on held out, the action set's order


@dataclass(frozen=True)
class _StepLoss:
    """What one mini-batch contributes: the loss to minimize and what gets logged."""

    total: Tensor  # () with graph
    kl: float
    entropy: float
    mean_advantage: float | None


@dataclass(frozen=True)
class Validation:
    """Greedy-policy quality on held-out decisions (all None when nothing is held out)."""

    accuracy: float | None
    reward: float | None
    actions: tuple[float, float, float] | None


def train_sft(decisions: Sequence[Decision], cfg: TrainConfig) -> tuple[MetaPolicyNet, list[StepMetrics]]:
    """Fit a fresh policy to the oracle labels by cross-entropy -> (reference network, per-step metrics)."""
    train, val = prepare(decisions, cfg)
    net = _new_net(train, cfg)
    labels = oracle_labels(train.rewards)  # (N,)

    def step(index: Tensor) -> _StepLoss:
        logits = _forward(net, train, index)  # (B, 3)
        ent = entropy(torch.log_softmax(logits, dim=-1))
        return _StepLoss(sft_loss(logits, labels[index]), kl=0.0, entropy=float(ent.detach()),
                         mean_advantage=None)

    return net, _optimize(net, train, val, cfg, "sft", step)


def train_pg(decisions: Sequence[Decision], cfg: TrainConfig, init: MetaPolicyNet | None = None,
             reference: MetaPolicyNet | None = None) -> tuple[MetaPolicyNet, list[StepMetrics]]:
    """Policy-gradient fine-tuning with ``cfg.algo`` from a copy of ``init`` (a fresh net if None).

    The KL term is to ``reference``, or to ``init`` when no reference is given; with neither it is 0.
    Advantages are computed once over the training decisions (rewards are fixed offline data), by the
    algorithm's objective: of the sampled actions, or of every action of each decision's set."""
    if ALGORITHMS[cfg.algo].supervised:
        raise DelibError(f"train_pg needs a policy-gradient algo, got {cfg.algo!r}; use train_sft for sft")
    train, val = prepare(decisions, cfg)
    for given in (init, reference):
        _check_width(given, train)
    check_ignored(init, cfg)
    net = copy.deepcopy(init) if init is not None else _new_net(train, cfg)
    ref_logits = _reference_logits(reference if reference is not None else init, train)  # (N, A) or None
    advantages = ALGORITHMS[cfg.algo].decision_advantages(train, cfg).float()  # (N,) or (N, A): rl/objectives.py

    def step(index: Tensor) -> _StepLoss:
        ref = ref_logits[index] if ref_logits is not None else None
        terms = policy_loss(_forward(net, train, index), ref, train.actions[index], advantages[index],
                            train.logprobs[index], cfg)
        return _StepLoss(terms.total, kl=float(terms.kl.detach()), entropy=float(terms.entropy.detach()),
                         mean_advantage=float(advantages[index].mean()))

    return net, _optimize(net, train, val, cfg, cfg.algo, step)


def prepare(decisions: Sequence[Decision], cfg: TrainConfig) -> tuple[DecisionBatch, DecisionBatch]:
    """Keep the first ``cfg.group_size`` samples of each question, validate and tensorize the decisions, then
    hold out questions -> (train, val)."""
    return split_by_example(tensorize(first_samples(decisions, cfg.group_size)), cfg.val_fraction, cfg.seed)


def _check_width(net: MetaPolicyNet | None, data: DecisionBatch) -> None:
    """A start policy must read the decisions' features and choose among their actions."""
    if net is not None and net.n_features != data.n_features:
        raise DelibError(f"the policy takes {net.n_features} features but the decisions have {data.n_features}; "
                         "recollect the rollouts or retrain the SFT policy with the current features")
    if net is not None and net.n_actions != data.n_actions:
        raise DelibError(f"the policy chooses among {net.n_actions} actions but the decisions score "
                         f"{data.n_actions}; start from a policy trained with the same --actions")


def check_ignored(init: MetaPolicyNet | None, cfg: TrainConfig) -> None:
    """Fine-tuning keeps the start policy's inputs: its ignored features must be the ones asked for."""
    if init is not None and init.ignored != cfg.ignored_columns():
        raise DelibError(f"the start policy ignores feature columns {list(init.ignored)} but ignore_features "
                         f"{list(cfg.ignore_features)} asks for {list(cfg.ignored_columns())}; train it with "
                         "the same --ignore-features")


def _new_net(data: DecisionBatch, cfg: TrainConfig) -> MetaPolicyNet:
    """A freshly initialized network for ``data``'s features and actions, seeded without disturbing the
    global torch RNG."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        return MetaPolicyNet(data.n_features, hidden=cfg.hidden, heads=cfg.heads, ignored=cfg.ignored_columns(),
                             n_actions=data.n_actions)


def _forward(net: MetaPolicyNet, batch: DecisionBatch, index: Tensor) -> Tensor:
    """Logits (B, A) of rows ``index`` of ``batch``."""
    return net(batch.own[index], batch.peers[index], batch.peer_mask[index])


def _reference_logits(reference: MetaPolicyNet | None, batch: DecisionBatch) -> Tensor | None:
    """Reference logits (N, A) for every training decision, computed once (the reference is frozen)."""
    if reference is None:
        return None
    with torch.no_grad():
        return reference(batch.own, batch.peers, batch.peer_mask)


def _optimize(net: MetaPolicyNet, train: DecisionBatch, val: DecisionBatch, cfg: TrainConfig, stage: str,
              step_loss: Callable[[Tensor], _StepLoss]) -> list[StepMetrics]:
    """Adam over seeded shuffled mini-batches for ``cfg.epochs``; evaluate on ``val`` after every step."""
    optimizer = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    order = torch.Generator().manual_seed(cfg.seed)
    metrics: list[StepMetrics] = []
    for epoch in range(cfg.epochs):
        for index in torch.randperm(len(train), generator=order).split(cfg.batch_size):
            out = step_loss(index)
            if not math.isfinite(float(out.total.detach())):
                raise DelibError(f"{stage} loss became non-finite at step {len(metrics) + 1}; lower lr "
                                 f"(now {cfg.lr}) or check the rollouts")
            optimizer.zero_grad()
            out.total.backward()
            optimizer.step()
            metrics.append(_record(stage, len(metrics) + 1, epoch, out, validate(net, val)))
    return metrics


def _record(stage: str, step: int, epoch: int, out: _StepLoss, val: Validation) -> StepMetrics:
    return StepMetrics(stage=stage, step=step, epoch=epoch, loss=float(out.total.detach()), kl=out.kl,
                       entropy=out.entropy, mean_advantage=out.mean_advantage, val_accuracy=val.accuracy,
                       val_reward=val.reward, val_actions=val.actions)


def validate(net: MetaPolicyNet, val: DecisionBatch) -> Validation:
    """Greedy-action accuracy (a best action, ties included), expected counterfactual reward, action shares."""
    scores = held_out(net, val)
    if scores is None:
        return Validation(None, None, None)
    return Validation(scores.decision_accuracy, scores.policy_reward, scores.policy_actions)


def write_training_outputs(out_dir: str | os.PathLike, net: MetaPolicyNet, cfg: TrainConfig,
                           metrics: Sequence[StepMetrics], feature_names: Sequence[str],
                           feature_version: int, split: Split | None = None,
                           scores: HeldOutScores | None = None) -> Path:
    """Write ``policy.pt``, ``config.json``, ``metrics.jsonl``, ``split.json`` (the questions trained on and held
    out, when given) and ``held_out.json`` (the held-out ``scores``, when given) into ``out_dir``, all or nothing:
    they are written into a temporary sibling folder that is renamed to ``out_dir`` at the end. A write the file
    system refuses (a full disk) leaves nothing and is a DelibError naming the cause (``errors.write_error``)."""
    target = Path(out_dir)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise DelibError(f"{target} already exists and is not an empty folder; choose a new --out or delete it")
    try:  # the staging name is kept short: a --out name near the file system's limit must still fit
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name[:40]}.", dir=make_folder(target.parent)))
        try:
            _write_files(staging, net, cfg, metrics, tuple(feature_names), feature_version)
            if split is not None:
                write_split(staging, split)
            if scores is not None:
                write_held_out(staging, scores)
            if target.exists():
                target.rmdir()
            os.rename(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    except OSError as err:
        raise write_error(err, target) from err
    return target


def _write_files(folder: Path, net: MetaPolicyNet, cfg: TrainConfig, metrics: Sequence[StepMetrics],
                 feature_names: tuple[str, ...], feature_version: int) -> None:
    record = {**to_json(cfg), "hidden": net.hidden, "heads": net.heads}  # an --init net keeps its own sizes
    meta = {"config": record, "final": to_json(metrics[-1]) if metrics else None}
    save_policy(folder / CHECKPOINT_NAME, net, feature_names, feature_version, meta)
    (folder / "config.json").write_text(strict_json(record, indent=2) + "\n")
    lines = "".join(strict_json(to_json(m)) + "\n" for m in metrics)
    (folder / METRICS).write_text(lines)
