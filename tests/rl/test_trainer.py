"""SFT and policy-gradient training on synthetic decisions with a known best action (tests/rl/conftest.py)."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from deliberation.errors import DelibError
from deliberation.policy.checkpoint import load_meta, load_policy
from deliberation.policy.network import MetaPolicyNet
from deliberation.rl.config import TrainConfig
from deliberation.rl.data import split_by_example, tensorize
from deliberation.rl import trainer
from deliberation.rl.algorithms import POLICY_GRADIENT
from deliberation.rl.trainer import CHECKPOINT_NAME, train_pg, train_sft, validate, write_training_outputs
from deliberation.actions import Action
from deliberation.types import Decision

FAST = TrainConfig(epochs=12, lr=1e-2, val_fraction=0.25, seed=0)
NAMES = ("f0", "f1", "f2", "f3")


def best_fixed_accuracy(decisions, cfg: TrainConfig) -> float:
    """Held-out accuracy of the best constant policy: the share of decisions where its action earns the
    best reward (ties count as right, as in ``rl.evaluate``)."""
    _, val = split_by_example(tensorize(decisions), cfg.val_fraction, cfg.seed)
    best = val.rewards == val.rewards.max(-1, keepdim=True).values  # (N, 3)
    return float(best.double().mean(0).max())


def params(net: MetaPolicyNet) -> list[torch.Tensor]:
    return [p.detach().clone() for p in net.parameters()]


def test_sft_recovers_the_rule_on_held_out_questions(decisions):
    _, metrics = train_sft(decisions, FAST)
    fixed = best_fixed_accuracy(decisions, FAST)
    assert metrics[-1].val_accuracy > max(0.8, fixed + 0.3)


def test_softrankpo_from_scratch_beats_the_best_fixed_policy(decisions):
    _, metrics = train_pg(decisions, FAST)
    assert metrics[-1].stage == "softrankpo"
    assert metrics[-1].val_accuracy > best_fixed_accuracy(decisions, FAST) + 0.3


def test_softrankpo_fine_tuning_from_sft_keeps_the_accuracy_and_logs_kl(decisions):
    sft, _ = train_sft(decisions, FAST)
    _, metrics = train_pg(decisions, dataclasses.replace(FAST, epochs=4), init=sft)
    assert metrics[-1].kl > 0
    assert metrics[-1].val_accuracy > best_fixed_accuracy(decisions, FAST) + 0.3


@pytest.mark.parametrize("algo", sorted(POLICY_GRADIENT))
def test_one_update_changes_the_parameters_with_a_finite_loss(decisions, algo):
    cfg = dataclasses.replace(FAST, algo=algo, epochs=1, batch_size=len(decisions))
    init = MetaPolicyNet(4, hidden=FAST.hidden, heads=FAST.heads)
    before = params(init)
    net, metrics = train_pg(decisions, cfg, init=init)
    assert len(metrics) == 1 and torch.isfinite(torch.tensor(metrics[0].loss))
    assert any(not torch.equal(a, b) for a, b in zip(before, params(net)))
    assert all(torch.equal(a, b) for a, b in zip(before, params(init)))  # the caller's net is untouched


def test_sft_update_changes_the_parameters(decisions, monkeypatch):
    cfg = dataclasses.replace(FAST, epochs=1, batch_size=len(decisions))
    made, new_net = [], trainer._new_net

    def kept(*args):  # the net the trainer starts from, as it was made
        net = new_net(*args)
        made.append(params(net))
        return net

    monkeypatch.setattr(trainer, "_new_net", kept)
    net, metrics = train_sft(decisions, cfg)
    assert metrics[0].mean_advantage is None and metrics[0].loss > 0 and len(made) == 1
    assert any(not torch.equal(a, b) for a, b in zip(made[0], params(net)))


def test_training_is_deterministic_given_the_seed(decisions):
    cfg = dataclasses.replace(FAST, epochs=2)
    first, m1 = train_pg(decisions, cfg)
    second, m2 = train_pg(decisions, cfg)
    assert m1 == m2 and all(torch.equal(a, b) for a, b in zip(params(first), params(second)))
    _, m3 = train_pg(decisions, dataclasses.replace(cfg, seed=1))
    assert m3 != m1


def test_hard_softrankpo_training_ignores_the_reward_scale(decisions):
    runs = [train_pg(decisions, dataclasses.replace(FAST, epochs=3, reward_scale=s)) for s in (0.1, 1.0, 10.0)]
    accuracies = {m[-1].val_accuracy for _, m in runs}
    assert len(accuracies) == 1
    assert all(torch.equal(a, b) for a, b in zip(params(runs[0][0]), params(runs[2][0])))


def test_reinforce_does_depend_on_the_reward_scale(decisions):
    """The control for the scale test above: the scale-sensitive comparator trains differently."""
    cfg = dataclasses.replace(FAST, algo="reinforce", epochs=1)
    small, _ = train_pg(decisions, dataclasses.replace(cfg, reward_scale=0.1))
    large, _ = train_pg(decisions, dataclasses.replace(cfg, reward_scale=10.0))
    assert any(not torch.equal(a, b) for a, b in zip(params(small), params(large)))


def test_metrics_number_their_steps(decisions):
    _, metrics = train_pg(decisions, dataclasses.replace(FAST, epochs=1))
    assert [m.step for m in metrics] == list(range(1, len(metrics) + 1))
    assert metrics[-1].mean_advantage is not None and metrics[-1].entropy > 0


def test_validation_of_a_hand_built_policy():
    """A net that always picks REFINE (zero weights, head bias) on three decisions with rewards
    (P, R, C) = (1, 0, 0), (0, 1, 0), (0, 1, 1): REFINE is a best action in the last two (ties count),
    so accuracy 2/3; its reward is (0 + 1 + 1) / 3; every action is REFINE."""
    net = MetaPolicyNet(2, hidden=4, heads=1)
    with torch.no_grad():
        for p in net.parameters():
            p.zero_()
        net.head[-1].bias.copy_(torch.tensor([0.0, 5.0, 0.0]))
    batch = tensorize([Decision(f"q{i}", 0, 1, 0, (0.1, 0.2), ((0.3, 0.4),), Action.PERSIST, 0.0, r, 0.0, 0.0)
                       for i, r in enumerate([(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 1.0, 1.0)])])
    val = validate(net, batch)
    assert val.accuracy == pytest.approx(2 / 3) and val.reward == pytest.approx(2 / 3)
    assert val.actions == (0.0, 1.0, 0.0)


def test_without_held_out_questions_validation_fields_are_none(decisions):
    _, metrics = train_sft(decisions, dataclasses.replace(FAST, epochs=1, val_fraction=0.0))
    assert metrics[-1].val_accuracy is None and metrics[-1].val_actions is None


def test_empty_decisions_raise(decisions):
    with pytest.raises(DelibError, match="no training decisions"):
        train_sft([], FAST)


def test_nan_rewards_raise(decisions):
    bad = [*decisions[:10], dataclasses.replace(decisions[10], rewards=(float("nan"), 0.0, 1.0))]
    with pytest.raises(DelibError, match="NaN/inf"):
        train_pg(bad, FAST)


def test_feature_width_mismatch_raises(decisions):
    bad = [*decisions[:10], dataclasses.replace(decisions[10], own=(0.0,) * 5)]
    with pytest.raises(DelibError, match="width"):
        train_sft(bad, FAST)
    with pytest.raises(DelibError, match="the policy takes 6 features but the decisions have 4"):
        train_pg(decisions, FAST, init=MetaPolicyNet(6, hidden=64, heads=4))


def test_group_size_one_is_rejected(make_decisions):
    with pytest.raises(DelibError, match="group_size must be >= 2"):
        TrainConfig(group_size=1)
    with pytest.raises(DelibError, match="nothing to rank"):
        train_pg(make_decisions(n_examples=10, group_size=1), FAST)


def test_write_training_outputs_is_complete_and_loadable(decisions, tmp_path):
    cfg = dataclasses.replace(FAST, epochs=1)
    net, metrics = train_sft(decisions, cfg)
    out = write_training_outputs(tmp_path / "run" / "policy", net, cfg, metrics, NAMES, 1)
    assert sorted(p.name for p in out.iterdir()) == sorted([CHECKPOINT_NAME, "config.json", "metrics.jsonl"])
    assert json.loads((out / "config.json").read_text())["algo"] == "softrankpo"
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == len(metrics) and json.loads(lines[-1])["step"] == len(metrics)
    policy = load_policy(out / CHECKPOINT_NAME, NAMES, 1)
    own, peers = torch.rand(3, 4), torch.rand(3, 2, 4)
    assert torch.equal(policy.net(own, peers), net(own, peers))
    assert load_meta(out / CHECKPOINT_NAME)["config"]["lr"] == cfg.lr
    assert [p.name for p in out.parent.iterdir()] == ["policy"]  # no staging folder left


def test_write_training_outputs_refuses_a_non_empty_folder(decisions, tmp_path):
    cfg = dataclasses.replace(FAST, epochs=1)
    net, metrics = train_sft(decisions, cfg)
    (tmp_path / "policy").mkdir()
    (tmp_path / "policy" / "keep.txt").write_text("mine")
    with pytest.raises(DelibError, match="already exists"):
        write_training_outputs(tmp_path / "policy", net, cfg, metrics, NAMES, 1)
    assert [p.name for p in (tmp_path / "policy").iterdir()] == ["keep.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["policy"]


def test_train_pg_refuses_the_sft_algo(decisions):
    with pytest.raises(DelibError, match="train_sft"):
        train_pg(decisions, dataclasses.replace(FAST, algo="sft"))


def test_ignored_features_reach_the_network_and_must_match_the_start_policy(decisions):
    cfg = dataclasses.replace(FAST, epochs=1, ignore_features=("confidence",))  # column 2 of FEATURE_NAMES
    net, _ = train_sft(decisions, cfg)
    assert net.ignored == (2,)
    tuned, _ = train_pg(decisions, dataclasses.replace(cfg, algo="softrankpo"), init=net)
    assert tuned.ignored == (2,)
    with pytest.raises(DelibError, match="the start policy ignores feature columns \\[\\]"):
        train_pg(decisions, dataclasses.replace(cfg, algo="softrankpo"),
                 init=MetaPolicyNet(4, hidden=FAST.hidden, heads=FAST.heads))
