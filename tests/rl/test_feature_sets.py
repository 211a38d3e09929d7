"""Feature sets (engine/features.py): the ``signals`` set extends the paper's state with checked
arithmetic and log-probability confidence; a policy trained on it learns to use a signal the paper's
state lacks, saves its contract, and runs through mpdf; paper checkpoints read the paper's features."""

from __future__ import annotations

import json
import math

import numpy as np
import torch

from deliberation.cli.main import main
from deliberation.engine.features import PAPER, SIGNALS, arrays, contract
from deliberation.engine.state import AgentView, observe
from deliberation.policy.checkpoint import load_learned
from deliberation.rl.config import TrainConfig
from deliberation.rl.trainer import train_sft
from deliberation.actions import ACTIONS, Action
from deliberation.types import Decision, LogprobSummary

WRONG = SIGNALS.names.index("arith_wrong_share")


def test_the_signals_set_extends_the_papers_columns_and_keeps_the_peer_flags():
    summary = LogprobSummary(-0.2, -0.9, (-0.1,), (0, 1))
    views = [AgentView("72", "48 + 24 = 72", 0.9, 20, False, False, summary),
             AgentView("73", "48 + 24 = 73", 0.4, 20, False, False),
             AgentView("72", "So 72.", 0.7, 5, False, False)]
    obs = observe(views, 1, 2)
    own, peers = arrays(obs, SIGNALS)
    assert own.shape == (3, len(SIGNALS.names)) and peers.shape == (3, 2, len(SIGNALS.names))
    assert np.array_equal(own[:, : len(PAPER.names)], obs.own) and np.array_equal(
        peers[:, :, : len(PAPER.names)], obs.peers)
    assert own[:, WRONG].tolist() == [0.0, 1.0, 0.0]  # agent 1's written computation is wrong
    assert own[:, SIGNALS.names.index("lp_known")].tolist() == [1.0, 0.0, 0.0]
    assert peers[0, 0, WRONG] == 1.0  # agent 0 sees agent 1's slip
    paper_own, paper_peers = arrays(obs, PAPER)
    assert paper_own is obs.own and paper_peers is obs.peers
    assert contract(SIGNALS.names, SIGNALS.version) is SIGNALS and contract(PAPER.names, 2) is None


def flagged_decisions(n_questions: int = 80, seed: int = 0) -> list[Decision]:
    """Every feature random but one: when the own answer's arithmetic is flagged wrong, CONCEDE is right
    (+1) and PERSIST wrong (-1); unflagged, the reverse. REFINE always earns 0."""
    rng = np.random.default_rng(seed)
    width, out = len(SIGNALS.names), []
    for q in range(n_questions):
        for agent in range(3):
            for sample in range(4):
                own, peers = rng.random(width), rng.random((2, width))
                own[WRONG] = float(rng.random() < 0.5)
                rewards = (-1.0, 0.0, 1.0) if own[WRONG] else (1.0, 0.0, -1.0)
                out.append(Decision(f"q{q}", sample, 1, agent, tuple(own.tolist()),
                                    tuple(tuple(p.tolist()) for p in peers), ACTIONS[int(rng.integers(3))],
                                    math.log(1 / 3), rewards, 0.0, 0.0))
    return out


def test_a_policy_learns_to_concede_away_from_flagged_arithmetic_and_not_without_the_signal():
    torch.manual_seed(0)
    data = flagged_decisions()
    fast = dict(features="signals", epochs=30, lr=1e-2, batch_size=64)
    _, seeing = train_sft(data, TrainConfig(algo="sft", **fast))
    _, blind = train_sft(data, TrainConfig(algo="sft", ignore_features=("checked-arithmetic",), **fast))
    assert seeing[-1].val_accuracy > 0.95 and blind[-1].val_accuracy < 0.7


def test_train_on_signals_from_a_store_saves_the_contract_and_runs_in_mpdf(tmp_path):
    store, policy = tmp_path / "store", tmp_path / "policy"
    assert main(["tree", "--backend", "scripted", "--limit", "6", "--methods", "mpdf", "--out", str(store),
                 "--quiet"]) == 0
    assert main(["train", "--algo", "sft", "--trees", str(store), "--allow-test",
                 "--features", "signals", "--epochs", "2", "--out", str(policy)]) == 0
    loaded = load_learned(str(policy / "policy.pt"))
    assert loaded.feature_names == SIGNALS.names and loaded.net.n_features == len(SIGNALS.names)
    held_out = json.loads((policy / "split.json").read_text())["held_out"]  # not the questions it trained on
    assert main(["evaluate", "--trees", str(store), "--method", "mpdf", "--policy", str(policy / "policy.pt"),
                 "--ids", ",".join(held_out), "--rounds", "1", "--offline", "--quiet", "--out",
                 str(tmp_path / "run")]) == 0
    actions = {t["action"] for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()
               for t in json.loads(line)["turns"] if t["action"]}
    assert actions and actions <= {a.value for a in (Action.PERSIST, Action.REFINE, Action.CONCEDE)}


def test_the_shipped_policy_still_reads_the_papers_features():
    assert load_learned("default").feature_names == PAPER.names
