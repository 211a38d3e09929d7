"""The advantage registry (rl/advantages.py ``ADVANTAGES``): adding an estimator is one function and its entry,
and the algorithm table, TrainConfig's check, the trainer and ``delib train --algo`` follow."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
import torch

from deliberation.cli.main import build_parser
from deliberation.rl.advantages import ADVANTAGES, Advantage, reinforce_baseline
from deliberation.rl.algorithms import ALGORITHMS, OBJECTIVES, POLICY_GRADIENT
from deliberation.rl.config import TrainConfig
from deliberation.rl.trainer import train_pg


def test_one_entry_is_an_algorithm_that_trains(monkeypatch, decisions, tmp_path):
    seen = []

    def tempered_sign(rewards, groups, tau=0.0):  # a tempered sign of the group-centred reward
        seen.append(tau)
        centred = reinforce_baseline(rewards, groups)
        return torch.tanh(centred / tau) if tau > 0 else torch.sign(centred)

    monkeypatch.setitem(ADVANTAGES.table, "tempered_sign", Advantage(tempered_sign, ("tau",)))  # the one edit
    assert {"tempered_sign", "tempered_sign-full"} <= set(POLICY_GRADIENT)
    assert "tempered_sign-pooled" not in ALGORITHMS  # pooled only where registered (softrankpo)
    cfg = TrainConfig(algo="tempered_sign", tau=0.5, epochs=1, batch_size=len(decisions), val_fraction=0.25)
    _, metrics = train_pg(decisions, cfg)
    assert seen == [0.5] and metrics[-1].stage == "tempered_sign" and torch.isfinite(torch.tensor(metrics[-1].loss))
    train_pg(decisions, dataclasses.replace(cfg, algo="tempered_sign-full"))
    assert seen == [0.5, 0.5]
    args = build_parser().parse_args(["train", "--algo", "tempered_sign-full", "--out", str(tmp_path / "out")])
    assert args.algo == "tempered_sign-full"


def test_the_table_holds_every_registered_function_under_each_objective_it_names():
    assert all(advantage.fn.__name__ == name for name, advantage in ADVANTAGES.items())
    for name, advantage in ADVANTAGES.items():
        labels = {name if o == "sampled" else f"{name}-{o}" for o in advantage.objectives}
        assert labels <= set(ALGORITHMS) and all(ALGORITHMS[label].advantage == name for label in labels)
    assert set(ADVANTAGES["softrankpo"].objectives) == set(OBJECTIVES)
    assert ADVANTAGES["grpo"].objectives == ("sampled", "full")


def test_every_declared_parameter_is_a_train_config_field():
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    assert all(set(advantage.params) <= fields for advantage in ADVANTAGES.values())
    assert ADVANTAGES["softrankpo"].params == ("tau",)


def test_bad_entries_are_refused(monkeypatch):
    with pytest.raises(ValueError, match="takes no such keyword"):
        Advantage(lambda rewards, groups: rewards, ("tau",))
    monkeypatch.setitem(ADVANTAGES.table, "odd", Advantage(reinforce_baseline, objectives=("sampled", "sideways")))
    with pytest.raises(ValueError, match="unknown objectives"):
        list(ALGORITHMS)


def test_building_the_command_line_loads_no_torch():
    """--algo's choices are registry views read when shown or checked, so other commands start fast."""
    code = "import sys; from deliberation.cli.main import build_parser; build_parser(); print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False"]
