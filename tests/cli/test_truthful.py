"""Messages that tell the truth and settings that mean what they say: Ctrl-C says what was kept (and it was),
a data directory the user names that does not exist or lacks the split is an error before anything is
written, and config.json's data_dir names where the questions did come from."""

from __future__ import annotations

import json
import os

import pytest

import deliberation.cli.main as cli_main
from deliberation.cli.main import main

SCRIPTED = ["--backend", "scripted", "--quiet"]
SAVES = "finished work is saved, rerun the same command to resume"
NOTHING = "nothing was saved (this command writes its output only when it finishes); rerun it to start over"

# --- Ctrl-C ------------------------------------------------------------------------------------------------

COMMANDS = {  # a valid command line of each command, and whether it saves its work as it goes
    "run": (["run", "--method", "cot", "--out", "o"], True),
    "experiment": (["experiment", "exp.toml"], True),
    "collect": (["collect", "--out", "o"], True),
    "iterate": (["iterate", "--iterations", "1", "--out", "o"], True),
    "tree": (["tree", "--out", "o"], True),
    "evaluate": (["evaluate", "--trees", "t", "--method", "cot", "--out", "o"], True),
    "tune-rules": (["tune-rules", "--trees", "t", "--out", "o"], True),
    "tune-votes": (["tune-votes", "--trees", "t", "--out", "o"], True),
    "compare": (["compare", "--trees", "t", "--policy", "default", "--rule", "r.json", "--out", "o"], True),
    "train": (["train", "--rollouts", "r", "--out", "o"], False),
    "train-allocator": (["train-allocator", "--trees", "t", "--out", "o"], False),
    "report": (["report", "afolder", "--out", "rep"], False),
    "ask": (["ask", "What is 2 + 2?"], False),
    "ask-cached": (["ask", "What is 2 + 2?", "--cache", "c.sqlite"], True),  # its calls are in the cache
    "models": (["models"], False),
    "bench": (["bench", "--out", "b.json"], False),
}


def interrupted(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, argv: list[str]) -> str:
    """Run ``delib argv`` with Ctrl-C arriving as the command starts; its one line on stderr."""
    real = cli_main.build_parser

    def build_parser():
        parser = real()
        parse = parser.parse_args

        def parse_args(args):
            parsed = parse(args)
            parsed.func = lambda _: (_ for _ in ()).throw(KeyboardInterrupt())
            return parsed

        parser.parse_args = parse_args
        return parser

    monkeypatch.setattr(cli_main, "build_parser", build_parser)
    assert main(argv) == 130
    return capsys.readouterr().err.strip()


@pytest.mark.parametrize("command", COMMANDS)
def test_ctrl_c_says_whether_the_command_saved_its_work(here, monkeypatch, capsys, command):
    argv, saves = COMMANDS[command]
    assert interrupted(monkeypatch, capsys, argv) == f"delib: interrupted; {SAVES if saves else NOTHING}"


def test_ctrl_c_during_train_saves_nothing_and_says_so(tmp_path, monkeypatch, capsys):
    rollouts, out = tmp_path / "rollouts", tmp_path / "ckpt"
    assert main(["collect", "--split", "test", "--allow-test", "--limit", "6", "--joint-actions", "2", "--out",
                 str(rollouts), *SCRIPTED]) == 0
    monkeypatch.setattr("deliberation.rl.trainer._optimize", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert main(["train", "--algo", "sft", "--rollouts", str(rollouts), "--out", str(out)]) == 130
    assert NOTHING in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rollouts"]  # true: nothing, not even a staging folder


def test_ctrl_c_during_a_run_keeps_the_finished_episodes_and_says_so(tmp_path, monkeypatch, capsys):
    from deliberation.runs.directory import RunDir

    out, real, calls = tmp_path / "run", RunDir.append, []

    def append(self, episode):
        calls.append(episode)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(self, episode)

    argv = ["run", "--method", "cot", "--limit", "3", "--out", str(out), *SCRIPTED]
    with monkeypatch.context() as patch:
        patch.setattr(RunDir, "append", append)
        assert main(argv) == 130
    assert SAVES in capsys.readouterr().err
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 1  # true: the first episode is there
    assert main(argv) == 0 and len((out / "episodes.jsonl").read_text().splitlines()) == 3


# --- a data directory the user names -----------------------------------------------------------------------


@pytest.fixture(autouse=True)
def data_dir_restored(monkeypatch):
    """--data-dir sets $DELIB_DATA_DIR for the process (and its workers): undone after each test."""
    monkeypatch.setenv("DELIB_DATA_DIR", os.environ.get("DELIB_DATA_DIR", ""))


@pytest.mark.parametrize("argv", [
    ["tree", "--limit", "1", *SCRIPTED, "--out", "o"],
    ["collect", "--limit", "1", *SCRIPTED, "--out", "o"],
    ["evaluate", "--trees", "t", "--method", "cot", "--offline", "--quiet", "--out", "o"],
])
@pytest.mark.parametrize(("given", "said"), [("nowhere", "does not exist"), ("afile", "is a file"),
                                             ("", "is empty")])
def test_a_data_dir_that_is_not_a_folder_is_refused_before_anything_runs(refused, argv, given, said):
    err = refused(*argv, "--data-dir", given)
    assert f"data directory {given} {said}; name the folder holding <benchmark>/<split>.jsonl" in err


def test_a_data_dir_without_the_split_is_refused_not_replaced_by_a_package(refused, here):
    (here / "partial" / "gsm8k").mkdir(parents=True)
    (here / "partial" / "gsm8k" / "train.jsonl").write_text('{"id": "t1", "question": "1 + 1?", "answer": "2"}\n')
    err = refused("run", "--method", "cot", "--split", "test", "--limit", "1", *SCRIPTED, "--out", "o",
                  "--data-dir", "partial")
    assert "data directory partial holds no gsm8k/test.jsonl" in err and "while the run records partial" in err


def test_an_experiment_data_dir_that_does_not_exist_is_refused(refused, experiment_file):
    path = experiment_file('benchmarks = ["gsm8k"]\nlimit = 1\ndata_dir = "missing-data"\n')
    assert "exp.toml: data_dir: data directory missing-data does not exist" in refused("experiment", str(path))


def test_the_record_names_the_data_dir_the_questions_came_from(here):
    (here / "mine" / "gsm8k").mkdir(parents=True)
    (here / "mine" / "gsm8k" / "test.jsonl").write_text('{"id": "only-here", "question": "3 + 4?", "answer": "7"}\n')
    assert main(["run", "--method", "cot", *SCRIPTED, "--out", "o", "--data-dir", "mine"]) == 0
    assert json.loads((here / "o" / "config.json").read_text())["data_dir"] == "mine"
    assert [json.loads(x)["example_id"] for x in (here / "o" / "episodes.jsonl").read_text().splitlines()] == \
        ["only-here"]
