"""The four-action set: decisions from a tree store score RESAMPLE beside the paper's actions,
a policy trained on them saves a four-action head and runs in mpdf, and on synthetic decisions a learned
policy finds both new moves: RESAMPLE where the team is split (worth its tokens only there) and CONCEDE
away from an answer whose arithmetic is flagged wrong."""

from __future__ import annotations

import json
import math

import numpy as np
import torch

from deliberation.cli.main import main
from deliberation.engine.features import SIGNALS
from deliberation.policy.checkpoint import load_learned, save_policy
from deliberation.rl.config import TrainConfig
from deliberation.rl.data import tensorize
from deliberation.rl.from_trees import decisions_from_trees
from deliberation.rl.trainer import train_pg, train_sft
from deliberation.actions import ACTION_ORDER, Action
from deliberation.types import Decision
from replays import episodes

SHARE, WRONG = SIGNALS.names.index("agree_share"), SIGNALS.names.index("arith_wrong_share")
PERSIST, REFINE, CONCEDE, RESAMPLE = range(4)
QUESTIONS = 12


def test_store_decisions_score_four_actions_and_train_a_four_action_policy(tmp_path):
    store, policy = tmp_path / "store", tmp_path / "policy"
    assert main(["tree", "--backend", "scripted", "--limit", "8", "--samples", "6", "--methods", "mpdf",
                 "--out", str(store), "--quiet"]) == 0
    decisions = decisions_from_trees(store, actions="resample")
    assert decisions and all(len(d.rewards) == 4 and d.resample_tokens and d.resample_tokens > 0 for d in decisions)
    assert Action.RESAMPLE in {d.action for d in decisions}  # explored by the epsilon-mixed behaviour
    assert tensorize(decisions).action_costs.shape == (len(decisions), 4)
    assert main(["train", "--algo", "sft", "--trees", str(store), "--allow-test",
                 "--actions", "resample", "--epochs", "2", "--out", str(policy)]) == 0
    assert load_learned(str(policy / "policy.pt")).net.n_actions == 4
    held_out = json.loads((policy / "split.json").read_text())["held_out"]  # not the questions it trained on
    assert main(["evaluate", "--trees", str(store), "--method", "mpdf", "--policy", str(policy / "policy.pt"),
                 "--ids", ",".join(held_out), "--rounds", "1", "--offline", "--quiet", "--out",
                 str(tmp_path / "run")]) == 0


def situation_decisions(n_questions: int = 90, seed: int = 0) -> list[Decision]:
    """Three situations, features random but two: split (own share 1/3): RESAMPLE earns 1, the rest 0;
    flagged (own arithmetic wrong, share 2/3 held by peers): CONCEDE and RESAMPLE earn 1, the rest 0;
    settled (share 1): PERSIST and REFINE and RESAMPLE earn 0, CONCEDE -1. REFINE costs 400 tokens, RESAMPLE 300."""
    rng = np.random.default_rng(seed)
    width, out = len(SIGNALS.names), []
    for q in range(n_questions):
        kind = q % 3
        for agent in range(3):
            own, peers = rng.random(width), rng.random((2, width))
            own[SHARE], own[WRONG] = ((1 / 3, 0.0), (1 / 3, 1.0), (1.0, 0.0))[kind]
            rewards = ((0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 1.0, 1.0), (0.0, 0.0, -1.0, 0.0))[kind]
            for sample in range(4):
                taken = ACTION_ORDER[int(rng.integers(4))]
                out.append(Decision(f"q{q}", sample, 1, agent, tuple(own.tolist()),
                                    tuple(tuple(p.tolist()) for p in peers), taken, math.log(1 / 4), rewards,
                                    0.0, 0.0, {Action.REFINE: 400.0, Action.RESAMPLE: 300.0}.get(taken, 0.0),
                                    400.0, 300.0))
    return out


def test_a_learned_policy_resamples_only_where_split_and_concedes_away_from_flagged_arithmetic():
    torch.manual_seed(0)
    data = situation_decisions()
    cfg = TrainConfig(algo="softrankpo-full", features="signals", actions="resample", epochs=20, lr=1e-2,
                      batch_size=64, token_cost_coef=1e-3, val_fraction=0.0)
    sft, _ = train_sft(data, cfg)  # the pipeline of `delib train`: SFT on oracle labels, then SoftRankPO
    net, _ = train_pg(data, cfg, init=sft, reference=sft)
    batch = tensorize(data)
    with torch.no_grad():
        greedy = net(batch.own, batch.peers, batch.peer_mask).argmax(-1)  # (N,)
    kind = torch.tensor([int(e[1:]) % 3 for e in batch.examples])  # (N,)
    assert (greedy[kind == 0] == RESAMPLE).all()  # split: a fresh sample is worth its tokens
    assert (greedy[kind == 1] == CONCEDE).all()  # flagged: concede (as good as RESAMPLE, and free)
    assert (greedy[kind == 2] == PERSIST).all()  # settled: nothing is worth a call


def test_a_four_action_signals_policy_replays_offline_as_online(tmp_path):
    """The primary arm's kind of checkpoint (signals state, here with RESAMPLE too): the policy learned on
    the synthetic situations reads the agreement share and the arithmetic flags from a scripted store's
    nodes; its offline replay equals its live run, with RESAMPLE taken on some decisions and PERSIST on others."""
    torch.manual_seed(0)
    data = situation_decisions()
    cfg = TrainConfig(algo="sft", features="signals", actions="resample", epochs=20, lr=1e-2, batch_size=64,
                      val_fraction=0.0)
    net, _ = train_sft(data, cfg)
    policy = save_policy(tmp_path / "policy.pt", net, SIGNALS.names, SIGNALS.version, {})
    store, replay, run = tmp_path / "store", tmp_path / "replay", tmp_path / "run"
    common = ("--method", "mpdf", "--policy", str(policy), "--rounds", "1", "--quiet")
    assert main(["tree", "--backend", "scripted", "--limit", str(QUESTIONS), "--samples", "6", "--methods", "mpdf",
                 "--out", str(store), "--quiet"]) == 0
    assert main(["evaluate", "--trees", str(store), "--offline", *common, "--out", str(replay)]) == 0
    assert main(["run", "--backend", "scripted", "--limit", str(QUESTIONS), *common, "--out", str(run)]) == 0
    assert episodes(replay) == episodes(run)
    taken = json.loads((run / "summary.json").read_text())["actions"]
    assert taken.get("resample", 0) > 0 and taken["persist"] > 0  # it reads the state, not a constant
