"""The advantage registry (rl/advantages.py ``register_advantage``): adding an estimator is one decorated
function, and the algorithm table, TrainConfig's check, the trainer and ``delib train --algo`` follow."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
import torch

from deliberation.cli.main import build_parser
from deliberation.rl.advantages import ADVANTAGES, register_advantage, reinforce_baseline
from deliberation.rl.algorithms import ALGORITHMS, OBJECTIVES, POLICY_GRADIENT
from deliberation.rl.config import TrainConfig
from deliberation.rl.trainer import train_pg


@pytest.fixture
def registry():
    """ADVANTAGES as it was before the test, restored after it (whatever the test registers)."""
    saved = dict(ADVANTAGES)
    yield ADVANTAGES
    ADVANTAGES.clear()
    ADVANTAGES.update(saved)


def test_one_decorated_function_is_an_algorithm_that_trains(registry, decisions, tmp_path):
    seen = []

    @register_advantage("tau")  # the one edit: a tempered sign of the group-centred reward
    def tempered_sign(rewards, groups, tau=0.0):
        seen.append(tau)
        centred = reinforce_baseline(rewards, groups)
        return torch.tanh(centred / tau) if tau > 0 else torch.sign(centred)

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
    for name, advantage in ADVANTAGES.items():
        labels = {name if o == "sampled" else f"{name}-{o}" for o in advantage.objectives}
        assert labels <= set(ALGORITHMS) and all(ALGORITHMS[label].advantage == name for label in labels)
    assert set(ADVANTAGES["softrankpo"].objectives) == set(OBJECTIVES)
    assert ADVANTAGES["grpo"].objectives == ("sampled", "full")


def test_every_declared_parameter_is_a_train_config_field():
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    assert all(set(advantage.params) <= fields for advantage in ADVANTAGES.values())
    assert ADVANTAGES["softrankpo"].params == ("tau",)


def test_bad_registrations_are_refused(registry):
    with pytest.raises(ValueError, match="takes no such keyword"):
        register_advantage("tau")(lambda rewards, groups: rewards)
    with pytest.raises(ValueError, match="registered twice"):
        register_advantage()(reinforce_baseline)

    @register_advantage(objectives=("sampled", "sideways"))
    def odd(rewards, groups):
        return rewards

    with pytest.raises(ValueError, match="unknown objectives"):
        list(ALGORITHMS)


def test_building_the_command_line_loads_no_torch():
    """--algo's choices are registry views read when shown or checked, so other commands start fast."""
    code = "import sys; from deliberation.cli.main import build_parser; build_parser(); print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False"]
