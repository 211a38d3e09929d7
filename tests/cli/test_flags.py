"""Flags generated from the config dataclasses (cli/flags.py): one source for names, defaults and help."""

from __future__ import annotations

import argparse
import json
import dataclasses
from dataclasses import dataclass

import pytest

from deliberation.cli import flags
from deliberation.cli.common import engine_config
from deliberation.cli.main import build_parser, main
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
    start: str | None = None
    """Where to start (default: the beginning)."""


def test_a_hand_built_dataclass_becomes_these_flags():
    p = argparse.ArgumentParser()
    flags.add_flags(p, Toy)
    assert vars(p.parse_args([])) == {"count": 3, "rate": 0.5, "names": (), "loud": True, "quiet": False,
                                      "start": None}
    args = p.parse_args(["--count", "4", "--rate", "none", "--names", "a, b", "--no-loud", "--quiet"])
    assert flags.values(args, Toy) == {"count": 4, "rate": None, "names": ("a", "b"), "loud": False, "quiet": True,
                                       "start": None}
    assert flags.field_docs(Toy) == {"count": "How many, with 100%% certainty.", "rate": "A rate; none turns it off.",
                                     "names": "Some names.", "loud": "Speak up.",
                                     "start": "Where to start (default: the beginning)."}
    text = " ".join(p.format_help().split())
    assert "How many, with 100% certainty. (default 3)" in text
    assert "--no-loud turns it off (on by default): Speak up." in text
    assert "--quiet turns it on (off by default)" in text
    assert text.endswith("Where to start (default: the beginning).")  # its own words, no "(default: none)" after


def test_suppressed_flags_leave_absent_fields_to_the_dataclass():
    p = argparse.ArgumentParser()
    flags.add_flags(p, Toy, skip=("names",), suppress=True)
    assert flags.values(p.parse_args(["--rate", "0.1"]), Toy) == {"rate": 0.1}


def test_delib_run_help_teaches_the_allocator_its_budget_and_what_it_needs(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "mpdf-allocate a learned allocator draws samples until it says STOP, at most --agents (above the team " \
        "of 3), reading their answers' log-probabilities" in text
    assert "delib run --method mpdf-allocate --agents 12 --stop-at 0.99" in text


def test_delib_run_defaults_are_engine_config_defaults():
    """No flag given, `delib run`'s engine is EngineConfig's defaults (its parser leaves --agents unset, so that
    --team can set it, and ``engine_config`` fills it in)."""
    args = build_parser().parse_args(["run", "--method", "cot", "--out", "x"])
    expected = {f.name: f.default for f in dataclasses.fields(EngineConfig)}
    assert dataclasses.asdict(engine_config(args)) == expected
    team = build_parser().parse_args(["run", "--method", "cot", "--out", "x", "--team", "a,b"])
    assert engine_config(team).agents == 2


def test_an_agent_count_or_depth_the_method_overrides_is_noted_and_recorded_as_given(tmp_path, caplog):
    """cot runs one agent and no rounds whatever --agents and --rounds say: the run goes on (a loop over methods
    with one set of flags is how comparisons are run) and stderr says what did not apply."""
    out = tmp_path / "cot"
    with caplog.at_level("WARNING", logger="deliberation"):
        assert main(["run", "--method", "cot", "--agents", "5", "--rounds", "2", "--backend", "scripted", "--limit",
                     "1", "--out", str(out), "--quiet"]) == 0
    notes = [r.getMessage() for r in caplog.records]
    assert notes == ["delib: note: method cot runs with agents = 1; --agents 5 does not apply (several samples: "
                     "--method self-consistency --agents N)",
                     "delib: note: method cot runs with rounds = 0; --rounds 2 does not apply"]
    engine = json.loads((out / "config.json").read_text())["engine"]  # as given: resuming older runs keeps working
    assert (engine["agents"], engine["rounds"]) == (5, 2)


def test_nothing_is_noted_for_what_the_method_reads_or_was_not_given(tmp_path, caplog):
    with caplog.at_level("WARNING", logger="deliberation"):
        for method, flags_ in (("self-consistency", ["--agents", "5"]), ("debate", ["--rounds", "1"]), ("cot", [])):
            assert main(["run", "--method", method, *flags_, "--backend", "scripted", "--limit", "1",
                         "--out", str(tmp_path / method), "--quiet"]) == 0
    assert caplog.records == []


@pytest.mark.parametrize(("method", "said"), [
    ("php", "runs with hinted calls until two answers agree, at most --php-max-calls; --rounds 2 does not apply"),
    ("aflow-gsm8k", "runs with the steps of its workflow; --rounds 2 does not apply")])
def test_a_method_that_runs_rounds_of_its_own_is_not_said_to_run_none(tmp_path, caplog, method, said):
    """The engine these methods run with has 0 rounds, but they call the model more than once: the note names
    what they run with, not the engine's number."""
    with caplog.at_level("WARNING", logger="deliberation"):
        assert main(["run", "--method", method, "--rounds", "2", "--backend", "scripted", "--limit", "1",
                     "--out", str(tmp_path / method), "--quiet"]) == 0
    notes = [r.getMessage() for r in caplog.records]
    assert notes == [f"delib: note: method {method} {said}"]


def test_every_shown_or_hinted_pin_is_a_pinnable_flag():
    from deliberation import methods
    from deliberation.cli.common import PINNABLE

    for name in methods.METHODS:
        method = methods.get(name)
        for flag, _ in (*method.pinned_shown, *method.pinned_hints):
            assert flag in PINNABLE, (name, flag)


def test_a_team_or_the_default_depth_given_to_a_method_that_overrides_it_is_noted(tmp_path, caplog):
    with caplog.at_level("WARNING", logger="deliberation"):
        assert main(["ask", "What is 2 + 2?", "--method", "cot", "--rounds", "2", "--backend", "scripted"]) == 0
        assert main(["run", "--method", "cot", "--team", "a,b", "--backend", "scripted", "--limit", "1",
                     "--out", str(tmp_path / "team"), "--quiet"]) == 0
    notes = [r.getMessage() for r in caplog.records]
    assert notes[0] == "delib: note: method cot runs with rounds = 0; --rounds 2 does not apply"  # the default
    assert notes[1].startswith("delib: note: method cot runs with agents = 1; --team (2 models) does not apply")


def test_every_train_config_field_but_algo_and_seed_is_a_train_flag():
    parser = build_parser()
    train = parser._subparsers._group_actions[0].choices["train"]
    dests = {a.dest for a in train._actions}
    wanted = {f.name for f in dataclasses.fields(TrainConfig)} - {"algo", "seed"}
    assert wanted <= dests and "train_seed" in dests
    args = parser.parse_args(["train", "--rollouts", "r", "--out", "o", "--kl-coef", "0.2", "--clip-eps", "none"])
    assert flags.values(args, TrainConfig, skip=("algo", "seed")) == {"kl_coef": 0.2, "clip_eps": None}


def test_the_optimisations_take_training_questions_and_their_help_says_so():
    parser = build_parser()
    for command in ("optimize-graph", "aflow-search", "run"):
        sub = parser._subparsers._group_actions[0].choices[command]
        split = next(a for a in sub._actions if a.dest == "split")
        assert (split.default, split.help) == (("test", "split (default test)") if command == "run" else
                                               ("train", "split (default train)"))
        assert command == "run" or sub.parse_args(["--out", "x"]).split == "train"


def test_no_flag_states_its_default_and_then_none():
    """A docstring that says its default ("Default: every registered method.") gets no "(default: none)"."""
    for command, sub in build_parser()._subparsers._group_actions[0].choices.items():
        for action in sub._actions:
            said = (action.help or "").lower()
            assert not (said.endswith("(default: none)") and "default:" in said[:-15]), (command, action.help)


def test_a_sampling_rule_that_cannot_stop_before_its_cap_is_noted(caplog):
    """At the default 3 agents adaptive-consistency (4 alike at the earliest, at 0.95) and early-stopping
    self-consistency (a first window of 5) draw every sample: self-consistency, said in a note; with room to
    stop, nothing is said."""
    asked = ["ask", "What is 2 + 2?", "--backend", "scripted"]
    with caplog.at_level("WARNING", logger="deliberation"):
        for extra in (["--method", "adaptive-consistency"], ["--method", "early-stopping-sc", "--agents", "5"],
                      ["--method", "adaptive-consistency", "--agents", "5"],
                      ["--method", "early-stopping-sc", "--esc-window", "2"],
                      ["--method", "adaptive-consistency", "--adaptive-threshold", "0.9", "--agents", "4"]):
            assert main([*asked, *extra]) == 0
    assert [r.getMessage() for r in caplog.records] == [
        "delib: note: method adaptive-consistency can stop only after 4 samples agree, so at --agents 3 it draws "
        "all 3 on every question (self-consistency); pass --agents above 4 to let it stop early",
        "delib: note: method early-stopping-sc can stop only after 5 samples agree, so at --agents 5 it draws all "
        "5 on every question (self-consistency); pass --agents above 5 to let it stop early"]
