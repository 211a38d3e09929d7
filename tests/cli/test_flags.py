"""Flags generated from the config dataclasses (cli/flags.py): one source for names, defaults and help."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass

from deliberation.cli import flags
from deliberation.cli.common import engine_config
from deliberation.cli.main import build_parser
from deliberation.config import EngineConfig
from deliberation.rl.config import TrainConfig


@dataclass(frozen=True)
class Toy:
    """A hand-built config."""

    count: int = 3
    """How many, with 100% certainty."""
    rate: float | None = 0.5
    """A rate; none turns it off."""
    names: tuple[str, ...] = ()
    """Some names."""
    loud: bool = True
    """Speak up."""
    quiet: bool = False


def test_a_hand_built_dataclass_becomes_these_flags():
    p = argparse.ArgumentParser()
    flags.add_flags(p, Toy)
    assert vars(p.parse_args([])) == {"count": 3, "rate": 0.5, "names": (), "loud": True, "quiet": False}
    args = p.parse_args(["--count", "4", "--rate", "none", "--names", "a, b", "--no-loud", "--quiet"])
    assert flags.values(args, Toy) == {"count": 4, "rate": None, "names": ("a", "b"), "loud": False, "quiet": True}
    assert flags.field_docs(Toy) == {"count": "How many, with 100%% certainty.", "rate": "A rate; none turns it off.",
                                     "names": "Some names.", "loud": "Speak up."}
    assert "How many, with 100% certainty. (default 3)" in " ".join(p.format_help().split())


def test_suppressed_flags_leave_absent_fields_to_the_dataclass():
    p = argparse.ArgumentParser()
    flags.add_flags(p, Toy, skip=("names",), suppress=True)
    assert flags.values(p.parse_args(["--rate", "0.1"]), Toy) == {"rate": 0.1}


def test_delib_run_defaults_are_engine_config_defaults():
    """No flag given, `delib run`'s engine is EngineConfig's defaults (its parser leaves --agents unset, so that
    --team can set it, and ``engine_config`` fills it in)."""
    args = build_parser().parse_args(["run", "--method", "cot", "--out", "x"])
    expected = {f.name: f.default for f in dataclasses.fields(EngineConfig)}
    assert dataclasses.asdict(engine_config(args)) == expected
    team = build_parser().parse_args(["run", "--method", "cot", "--out", "x", "--team", "a,b"])
    assert engine_config(team).agents == 2


def test_every_train_config_field_but_algo_and_seed_is_a_train_flag():
    parser = build_parser()
    train = parser._subparsers._group_actions[0].choices["train"]
    dests = {a.dest for a in train._actions}
    wanted = {f.name for f in dataclasses.fields(TrainConfig)} - {"algo", "seed"}
    assert wanted <= dests and "train_seed" in dests
    args = parser.parse_args(["train", "--rollouts", "r", "--out", "o", "--kl-coef", "0.2", "--clip-eps", "none"])
    assert flags.values(args, TrainConfig, skip=("algo", "seed")) == {"kl_coef": 0.2, "clip_eps": None}
