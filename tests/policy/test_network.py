"""The cross-attention meta-policy, its engine wrapper and its checkpoints (docs/design.md, section Policy network)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from deliberation.errors import DelibError
from deliberation.policy.checkpoint import load_meta, load_policy, save_policy
from deliberation.policy.learned import TrainedPolicy
from deliberation.policy.network import MetaPolicyNet
from deliberation.actions import ACTIONS

F = 5
NAMES = ("a", "b", "c", "d", "e")


@pytest.fixture
def net() -> MetaPolicyNet:
    torch.manual_seed(0)
    return MetaPolicyNet(F, hidden=16, heads=4)


def inputs(batch: int = 4, peers: int = 3, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(batch, F, generator=gen), torch.randn(batch, peers, F, generator=gen)


def test_forward_gives_three_finite_logits_per_agent(net):
    own, peers = inputs()
    logits = net(own, peers)
    assert logits.shape == (4, len(ACTIONS)) and bool(torch.isfinite(logits).all())


def test_output_is_invariant_to_the_order_of_the_peers(net):
    own, peers = inputs()
    shuffled = peers[:, torch.tensor([2, 0, 1])]
    assert torch.allclose(net(own, peers), net(own, shuffled), atol=1e-6)


def test_output_depends_on_the_peers(net):
    own, peers = inputs()
    assert not torch.allclose(net(own, peers), net(own, peers + 1.0), atol=1e-4)


def test_masked_peer_slots_are_ignored_whatever_they_hold(net):
    own, peers = inputs()
    padded = torch.cat([peers, torch.full((4, 2, F), 1e3)], dim=1)  # (4, 5, F): two junk slots
    mask = torch.tensor([[True, True, True, False, False]]).expand(4, 5)
    assert torch.allclose(net(own, peers), net(own, padded, mask), atol=1e-5)


def test_no_peers_and_all_masked_peers_are_finite_and_agree(net):
    own, peers = inputs()
    none = net(own, torch.zeros(4, 0, F))
    masked = net(own, peers, torch.zeros(4, 3, dtype=torch.bool))
    assert bool(torch.isfinite(none).all()) and torch.allclose(none, masked, atol=1e-6)


def test_gradients_reach_every_parameter(net):
    own, peers = inputs()
    net(own, peers).sum().backward()
    assert all(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in net.parameters())


def test_invalid_architecture_raises_delib_error():
    with pytest.raises(DelibError, match="divisible by heads"):
        MetaPolicyNet(F, hidden=10, heads=4)


def test_probs_are_a_distribution_per_agent(net):
    own, peers = (x.numpy() for x in inputs())
    p = TrainedPolicy(net).probs(own, peers)
    assert p.shape == (4, 3) and np.allclose(p.sum(-1), 1.0) and (p > 0).all()


def test_sampling_act_returns_actions_and_their_logprobs(net):
    own, peers = (x.numpy() for x in inputs())
    policy = TrainedPolicy(net, sample=True)
    actions, logprobs = policy.act(own, peers, np.random.default_rng(1))
    chosen = policy.probs(own, peers)[np.arange(4), [ACTIONS.index(a) for a in actions]]
    assert len(actions) == 4 and np.allclose(logprobs, np.log(chosen))


def test_act_is_reproducible_given_the_rng(net):
    own, peers = (x.numpy() for x in inputs(batch=30))
    policy = TrainedPolicy(net, sample=True)
    first = policy.act(own, peers, np.random.default_rng(7))
    second = policy.act(own, peers, np.random.default_rng(7))
    assert first[0] == second[0] and np.array_equal(first[1], second[1])


def test_greedy_act_takes_the_argmax_and_draws_once_per_agent(net):
    """Greedy is certain (log-prob 0) yet uses one draw per agent, as sampling does, so a run's random
    stream (the epsilon draws that follow in collection) is the same in both modes."""
    own, peers = (x.numpy() for x in inputs())
    policy = TrainedPolicy(net)
    rng, twin = np.random.default_rng(0), np.random.default_rng(0)
    actions, logprobs = policy.act(own, peers, rng)
    assert [ACTIONS.index(a) for a in actions] == list(policy.probs(own, peers).argmax(-1))
    assert np.allclose(logprobs, 0.0)
    twin.random(4)
    assert rng.random() == twin.random()


def test_sampling_frequencies_follow_the_policy(net):
    own, peers = (x.numpy() for x in inputs(batch=1))
    policy = TrainedPolicy(net, sample=True)
    rng = np.random.default_rng(3)
    own, peers = np.repeat(own, 6000, 0), np.repeat(peers, 6000, 0)
    taken = [ACTIONS.index(a) for a in policy.act(own, peers, rng)[0]]
    freq = np.bincount(taken, minlength=3) / len(taken)
    assert np.allclose(freq, policy.probs(own[:1], peers[:1])[0], atol=0.03)


def test_bad_shapes_raise(net):
    with pytest.raises(ValueError, match="expected own"):
        TrainedPolicy(net).probs(np.zeros((2, F)), np.zeros((3, 2, F)))


def test_checkpoint_round_trip_keeps_outputs_and_meta(net, tmp_path):
    path = save_policy(tmp_path / "p" / "policy.pt", net, NAMES, 3, {"algo": "softrankpo", "steps": [1, 2]})
    policy = load_policy(path, NAMES, 3)
    own, peers = inputs()
    assert torch.equal(policy.net(own, peers), net(own, peers))
    assert policy.feature_names == NAMES and policy.feature_version == 3
    assert load_meta(path) == {"algo": "softrankpo", "steps": [1, 2]}
    assert list(path.parent.iterdir()) == [path]  # no temporary file left behind


def test_loading_with_other_features_names_the_mismatch(net, tmp_path):
    path = save_policy(tmp_path / "policy.pt", net, NAMES, 1, {})
    with pytest.raises(DelibError, match="expects 5 features of version 1, this build produces 6 of version 1; "
                                         "retrain with delib train"):
        load_policy(path, (*NAMES, "f"), 1)
    with pytest.raises(DelibError, match="version 1, this build produces 5 of version 2"):
        load_policy(path, NAMES, 2)
    with pytest.raises(DelibError, match="feature 2 is 'c' there, 'x' here"):
        load_policy(path, ("a", "b", "x", "d", "e"), 1)


def test_loading_a_missing_or_foreign_file_raises_delib_error(tmp_path):
    with pytest.raises(DelibError, match="not found"):
        load_policy(tmp_path / "absent.pt", NAMES, 1)
    (tmp_path / "text.pt").write_text("hello")
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
    for name in ("text.pt", "other.pt"):
        with pytest.raises(DelibError, match="not a deliberation policy checkpoint"):
            load_policy(tmp_path / name, NAMES, 1)


def test_ignored_features_do_not_move_the_output_and_survive_a_checkpoint(tmp_path):
    torch.manual_seed(0)
    net = MetaPolicyNet(F, hidden=16, heads=4, ignored=[2])
    own, peers = inputs()
    moved_own, moved_peers = own.clone(), peers.clone()
    moved_own[:, 2] += 5.0
    moved_peers[..., 2] -= 3.0
    assert torch.allclose(net(own, peers), net(moved_own, moved_peers), atol=1e-6)
    moved_own[:, 1] += 5.0  # a feature it does see
    assert not torch.allclose(net(own, peers), net(moved_own, peers), atol=1e-4)
    path = save_policy(tmp_path / "p.pt", net, NAMES, 1, {})
    loaded = load_policy(path, NAMES, 1).net
    assert loaded.ignored == (2,) and torch.allclose(loaded(own, peers), net(own, peers), atol=1e-6)


def test_checkpoint_without_ignored_in_its_arch_ignores_nothing(net, tmp_path):
    path = save_policy(tmp_path / "p.pt", net, NAMES, 1, {})
    payload = torch.load(path, weights_only=True)
    del payload["arch"]["ignored"]  # as written before the field existed
    torch.save(payload, path)
    assert load_policy(path, NAMES, 1).net.ignored == ()


def test_ignored_column_out_of_range_is_refused():
    with pytest.raises(DelibError, match=r"ignored feature columns \[5\]"):
        MetaPolicyNet(F, hidden=16, heads=4, ignored=[5])
