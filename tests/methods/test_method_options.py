"""Method options are declared once (``MethodOptions``): every option reaches a method through
``delib run``, the Python calls, a replay and an experiment file, is recorded in config.json, is refused by a
method that does not read it, and reads as its default from a config.json written before it existed.

Each test walks every field of ``MethodOptions``, with a value other than its default derived from that
default: a field added there is exercised here with no edit to this file, and fails here if some path
drops it."""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any

import pytest

import deliberation
from deliberation import methods
from deliberation.benchmarks.answers import make_backend
from deliberation.benchmarks import get as get_benchmark
from deliberation.cli.main import build_parser, main
from deliberation.engine.spec import MethodSpec
from deliberation.errors import DelibError
from deliberation.methods.base import Method, MethodConfig
from deliberation.methods.options import DEFAULTS, MethodOptions, OPTION_NAMES, Variant
from deliberation.runs.api import run_experiment
from deliberation.runs.directory import RUN_RESUME
from deliberation.runs.replay import Replay, evaluate
from deliberation.runs.experiment_file import VARIANT_KEYS
from deliberation.runs.runner import RunSpec, method_entry
from deliberation.runs.variants import StoreSettings, replay_variants
from deliberation.types import to_json

SEEN: list[MethodConfig] = []


def _probe_spec(cfg: MethodConfig) -> MethodSpec:
    SEEN.append(cfg)
    return MethodSpec(name="probe", policy=None)  # round 0 only: any store replays it


PROBE = Method(spec=_probe_spec, options=frozenset(OPTION_NAMES))
"""A method that reads every option and remembers the configs it was built with."""


def _other(default: Any, kind: Any) -> Any:
    """A value other than ``default`` that passes the options' checks, by the field's type ``kind``: a switch
    flipped, a whole number one more, a real number halved (0.5 where the default is None), else a text."""
    if isinstance(default, bool):
        return not default
    if isinstance(default, int):
        return default + 1
    if isinstance(default, float) or float in typing.get_args(kind):
        return 0.5 if default is None else default / 2
    return "probe-value"


HINTS = typing.get_type_hints(MethodOptions)
GIVEN = {name: _other(DEFAULTS[name], HINTS[name]) for name in OPTION_NAMES}


def _flags() -> list[str]:
    """The flags that give ``GIVEN``: a switch alone (``--no-NAME`` for one on by default), else flag and value."""
    return [w for name, value in GIVEN.items() for w in _flag(name.replace("_", "-"), value)]


def _flag(name: str, value: Any) -> list[str]:
    if isinstance(value, bool):
        return [f"--{name}" if value else f"--no-{name}"]
    return [f"--{name}", str(value)]


@pytest.fixture
def probe(monkeypatch):
    """``probe`` registered as a method; the configs it is built with, cleared."""
    monkeypatch.setitem(methods.METHODS.table, "probe", f"{__name__}:PROBE")
    SEEN.clear()
    return SEEN


def _reached(seen: list[MethodConfig], before: int = 0) -> None:
    """The call made since ``seen`` held ``before`` configs built the method, each time with the options given."""
    assert len(seen) > before and all(cfg.method_options() == GIVEN for cfg in seen[before:]), seen


def _recorded(run: Path) -> None:
    config = json.loads((run / "config.json").read_text())
    assert {name: config[name] for name in OPTION_NAMES} == GIVEN


def test_every_record_that_carries_options_inherits_the_one_declaration():
    for cls in (MethodConfig, RunSpec, Replay, Variant):
        assert issubclass(cls, MethodOptions), cls
        redeclared = [(k.__name__, name) for k in cls.__mro__ if k is not MethodOptions
                      for name in OPTION_NAMES if name in k.__dict__.get("__annotations__", {})]
        assert not redeclared, redeclared
    assert set(OPTION_NAMES) <= set(VARIANT_KEYS)


@pytest.mark.parametrize("argv", [["run", "--method", "cot", "--out", "o"], ["ask", "2+2?"],
                                  ["evaluate", "--trees", "t", "--method", "cot", "--out", "o"]])
def test_each_command_that_runs_a_method_has_a_flag_per_option(argv):
    args = build_parser().parse_args([*argv, *_flags()])
    assert {name: getattr(args, name) for name in OPTION_NAMES} == GIVEN


def test_delib_run_passes_every_option_to_the_method_and_records_it(probe, tmp_path):
    run = tmp_path / "run"
    assert main(["run", "--method", "probe", "--backend", "scripted", "--limit", "1", "--quiet", "--out", str(run),
                 *_flags()]) == 0
    _reached(probe)
    _recorded(run)


def test_the_python_calls_pass_every_option_to_the_method(probe, tmp_path):
    deliberation.run_benchmark("probe", tmp_path / "run", backend="scripted", limit=1, **GIVEN)
    _recorded(tmp_path / "run")
    _reached(probe)
    before = len(probe)
    deliberation.deliberate("What is 2 + 2?", method="probe", backend="scripted", **GIVEN)
    _reached(probe, before)
    example, before = get_benchmark("gsm8k").load("test", limit=1)[0], len(probe)
    deliberation.run_method("probe", example, make_backend("scripted"), **GIVEN)
    _reached(probe, before)


def test_a_replay_and_a_replayed_variant_pass_every_option_to_the_method(probe, tmp_path):
    store = tmp_path / "store"
    assert main(["tree", "--backend", "scripted", "--limit", "1", "--samples", "3", "--methods", "cot", "--quiet",
                 "--out", str(store)]) == 0
    evaluate(Replay(str(store), ("probe",), offline=True, **GIVEN), str(tmp_path / "replay"), progress=False)
    _recorded(tmp_path / "replay")
    _reached(probe)
    before = len(probe)
    replay_variants(StoreSettings(trees=(str(store),), offline=True).replays(), [Variant("p", "probe", "p", **GIVEN)],
                    tmp_path / "variants")
    _recorded(tmp_path / "variants" / "store" / "p")
    _reached(probe, before)


def test_an_experiment_variant_passes_every_option_to_the_method(probe, tmp_path):
    keys = "".join(f"{name} = {json.dumps(value)}\n" for name, value in GIVEN.items())
    path = tmp_path / "exp.toml"
    path.write_text(f'name = "x"\nout = "{(tmp_path / "out").as_posix()}"\nbenchmarks = ["gsm8k"]\nlimit = 1\n'
                    f'[[variants]]\nlabel = "p"\nmethod = "probe"\n{keys}[backend]\nname = "scripted"\n')
    run_experiment(path)
    _reached(probe)
    _recorded(tmp_path / "out" / "gsm8k" / "p-s0")


@pytest.mark.parametrize("name", OPTION_NAMES)
def test_an_option_given_to_a_method_that_reads_none_is_refused(name):
    with pytest.raises(DelibError, match=f"--{name.replace('_', '-')} means nothing to method cot"):
        method_entry(RunSpec(method="cot", **{name: GIVEN[name]}))


@pytest.mark.parametrize("name", OPTION_NAMES)
def test_a_config_written_before_an_option_existed_reads_as_its_default(name):
    config = to_json(RunSpec(method="probe"))
    old = {k: v for k, v in config.items() if k != name}
    assert RUN_RESUME.canonical(old) == RUN_RESUME.canonical(config)
    assert RUN_RESUME.canonical(old) != RUN_RESUME.canonical({**config, name: GIVEN[name]})


def test_a_method_entry_naming_an_undeclared_option_is_a_programming_error():
    with pytest.raises(ValueError, match="not fields of MethodOptions"):
        dataclasses.replace(PROBE, options=frozenset({"polcy"}))


COUNTS = [f.name for f in dataclasses.fields(MethodOptions) if typing.get_type_hints(MethodOptions)[f.name] is int]


def test_the_count_options_are_found():
    assert {"php_max_calls", "esc_window"} <= set(COUNTS)


@pytest.mark.parametrize("name", COUNTS)
def test_a_count_option_takes_whole_numbers_only(name):
    """An experiment file's or a Python caller's 2.5 for a count (a cap on calls, a window of samples) passed
    the range check of a float: every option typed int refuses a number that is not whole."""
    flag = "--" + name.replace("_", "-")
    with pytest.raises(DelibError, match=f"^{flag} must be a whole number \\(got {DEFAULTS[name] + 0.5}\\)$"):
        MethodOptions(**{name: DEFAULTS[name] + 0.5})
