"""Feature extraction: agreement structure, confidence, reasoning profile, peer layout."""

import numpy as np

from deliberation.engine.state import FEATURE_NAMES, N_FEATURES, AgentView, observe

IDX = {name: i for i, name in enumerate(FEATURE_NAMES)}


def view(key, conf=0.5, text="Step 1: add.\nThe answer is 3.", changed=False):
    return AgentView(key, text, conf, 40, changed, False)


def test_shapes_and_agreement():
    obs = observe([view("3", 0.9), view("3", 0.4), view(None, None)], round_=1, rounds=2)
    assert obs.own.shape == (3, N_FEATURES) and obs.peers.shape == (3, 2, N_FEATURES)
    assert obs.own[0, IDX["agree_share"]] == np.float32(2 / 3)
    assert obs.own[2, IDX["parseable"]] == 0 and obs.own[2, IDX["agree_share"]] == 0
    assert obs.own[0, IDX["is_plurality"]] == 1 and obs.own[2, IDX["is_plurality"]] == 0
    assert obs.own[2, IDX["confidence"]] == np.float32(0.5)  # unknown confidence reads 0.5
    assert obs.own[0, IDX["round_frac"]] == np.float32(0.5)


def test_peer_flags_say_who_agrees_with_me():
    obs = observe([view("3"), view("3"), view("4")], round_=1, rounds=2)
    flag = IDX["agrees_with_self"]
    assert list(obs.own[:, flag]) == [1, 1, 1]
    assert list(obs.peers[0, :, flag]) == [1, 0]  # agent 0's peers: 1 agrees, 2 does not
    assert list(obs.peers[2, :, flag]) == [0, 0]
    np.testing.assert_array_equal(obs.peers[0, 1, :-1], obs.own[2, :-1])  # peer rows are the peers' z


def test_profile_features():
    obs = observe([view("1", text="Let me verify: 1 = 1.", changed=True), view("2")], round_=0, rounds=2)
    assert obs.own[0, IDX["verified"]] == 1 and obs.own[1, IDX["verified"]] == 0
    assert obs.own[0, IDX["changed"]] == 1 and obs.own[1, IDX["changed"]] == 0


def test_single_agent_has_no_peers():
    obs = observe([view("1")], round_=0, rounds=0)
    assert obs.peers.shape == (1, 0, N_FEATURES)
