"""TrainConfig validation and documentation."""

from __future__ import annotations

import ast
import dataclasses
import inspect

import pytest

from deliberation.errors import DelibError
from deliberation.rl import config as config_module
from deliberation.rl.config import TrainConfig


def test_defaults_follow_the_design():
    cfg = TrainConfig()
    assert (cfg.algo, cfg.group_size, cfg.tau) == ("softrankpo", None, 0.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.lr = 1.0  # type: ignore[misc]


@pytest.mark.parametrize("kwargs, message", [
    ({"group_size": 1}, "group_size must be >= 2"),
    ({"algo": "dpo"},
     "unknown algo 'dpo'; choose one of sft, softrankpo, grpo,"),
    ({"lr": -1e-3}, "lr must be > 0"),
    ({"lr": float("nan")}, "lr must be > 0"),
    ({"epochs": 0}, "epochs must be >= 1"),
    ({"batch_size": 0}, "batch_size"),
    ({"tau": -0.5}, "tau must be >= 0"),
    ({"kl_coef": -1.0}, "kl_coef must be >= 0"),
    ({"reward_scale": 0.0}, "reward_scale must be > 0"),
    ({"clip_eps": 1.5}, "clip_eps must be in"),
    ({"hidden": 30, "heads": 4}, "multiple of heads"),
    ({"val_fraction": 1.0}, "val_fraction"),
    ({"ignore_features": ("confidence", "nope")}, "ignore_features names unknown features ['nope']"),
    ({"reward_components": "neither"}, "unknown reward_components 'neither'"),
])
def test_invalid_values_raise_one_line_actionable_errors(kwargs, message):
    with pytest.raises(DelibError, match="invalid training config") as err:
        TrainConfig(**kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_every_field_has_a_docstring():
    tree = ast.parse(inspect.getsource(config_module))
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TrainConfig").body
    documented = {a.target.id for a, b in zip(body, body[1:])
                  if isinstance(a, ast.AnnAssign) and isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant)}
    assert documented == {f.name for f in dataclasses.fields(TrainConfig)}


def test_feature_groups_expand_to_their_columns():
    """The state-fidelity ablation: a group name ignores each of its features, a feature name only itself."""
    from deliberation.engine.state import FEATURE_GROUPS, FEATURE_NAMES

    for group, names in FEATURE_GROUPS.items():
        assert TrainConfig(ignore_features=(group,)).ignored_columns() == tuple(
            sorted(FEATURE_NAMES.index(n) for n in names))
    both = TrainConfig(ignore_features=("confidence-signals", "confidence")).ignored_columns()
    assert both == (FEATURE_NAMES.index("confidence"), FEATURE_NAMES.index("confidence_vs_mean"))
    assert TrainConfig(ignore_features=("confidence",)).ignored_columns() == (FEATURE_NAMES.index("confidence"),)
    grouped = {n for names in FEATURE_GROUPS.values() for n in names}
    assert grouped < set(FEATURE_NAMES) and len(grouped) == sum(map(len, FEATURE_GROUPS.values()))
