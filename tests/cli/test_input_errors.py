"""Inputs that once ended in a traceback or a silent wrong run: text files that are not UTF-8, output paths
that cannot be written, empty selections and caches that are folders. Each is one ``delib: error:`` line,
exit status 2, and nothing written anywhere under the test's folder (the current folder included)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from deliberation.cli.main import main
from deliberation.errors import DelibError

SCRIPTED = ["--backend", "scripted", "--limit", "1", "--quiet"]
LATIN1 = "café".encode("latin-1")
BOM = b"\xef\xbb\xbf"


def jsonl(folder: Path, name: str, data: bytes) -> str:
    (folder / name).write_bytes(data)
    return name


# --- 1. text files that are not UTF-8; a byte order mark is read -------------------------------------------


GOOD_LINE = b'{"id": "q1", "question": "What is 2 + 2?", "answer": "4"}\n'
BAD_LINE = b'{"id": "q2", "question": "' + LATIN1 + b' 3 + 3?", "answer": "6"}\n'


@pytest.mark.parametrize("command", [
    ["run", "--method", "cot", "--out", "o"],
    ["tree", "--out", "o"],
])
def test_an_own_data_file_that_is_not_utf8_is_named_with_its_line(refused, here, command):
    name = jsonl(here, "mine.jsonl", GOOD_LINE + BAD_LINE)
    err = refused(*command, "--benchmark", name, "--answer-type", "numeric", *SCRIPTED)
    assert "mine.jsonl:2 is not UTF-8 text (byte 0xe9" in err and "save it as UTF-8" in err


@pytest.mark.parametrize("body", ['benchmarks = ["gsm8k"]\n# café\n', 'benchmarks = ["gsm8k"]\ndata_dir = "café"\n'])
def test_an_experiment_file_that_is_not_utf8_is_refused(experiment_file, refused, body):
    path = experiment_file(body)
    path.write_bytes(path.read_text().encode("latin-1"))
    assert "exp.toml is not UTF-8 text (byte 0xe9" in refused("experiment", str(path), "--quiet")


def test_an_experiment_naming_an_own_file_that_is_not_utf8_is_refused(experiment_file, refused, here):
    name = jsonl(here, "mine.jsonl", BAD_LINE)
    path = experiment_file(f'benchmarks = ["numeric:{name}"]\n')
    assert "mine.jsonl:1 is not UTF-8 text" in refused("experiment", str(path), "--quiet")


@pytest.mark.parametrize("command", [["run", "--method", "cot", "--out", "o"], ["collect", "--out", "o"]])
def test_an_id_file_that_is_not_utf8_is_refused(refused, here, command):
    (here / "ids.txt").write_bytes(b"gsm8k/test/0\n" + LATIN1 + b"\n")
    assert "ids.txt is not UTF-8 text" in refused(*command, "--ids", "@ids.txt", *SCRIPTED)


def test_a_byte_order_mark_is_read_as_nothing(experiment_file, here):
    """Files saved by Windows editors start with one: the JSONL, the TOML and the id file all still work."""
    name = jsonl(here, "mine.jsonl", BOM + GOOD_LINE)
    assert main(["run", "--method", "cot", "--benchmark", name, "--answer-type", "numeric", "--out", "o",
                 *SCRIPTED]) == 0
    assert [json.loads(x)["example_id"] for x in (here / "o" / "episodes.jsonl").read_text().splitlines()] == ["q1"]
    path = experiment_file('benchmarks = ["gsm8k"]\nlimit = 1\n')
    path.write_bytes(BOM + path.read_bytes())
    assert main(["experiment", str(path), "--quiet"]) == 0
    (here / "ids.txt").write_bytes(BOM + b"q1\n")  # read as "q1", not "\ufeffq1" (no such question)
    assert main(["run", "--method", "cot", "--benchmark", name, "--answer-type", "numeric", "--ids", "@ids.txt",
                 "--out", "o2", *SCRIPTED]) == 0


# --- 2. output paths that cannot be written ------------------------------------------------------------------


FOLDER_COMMANDS = {
    "run": ["run", "--method", "cot", *SCRIPTED],
    "tree": ["tree", *SCRIPTED],
    "collect": ["collect", *SCRIPTED],
    "evaluate": ["evaluate", "--trees", "t", "--method", "cot", "--offline", "--quiet"],
    "train": ["train", "--rollouts", "r"],
    "iterate": ["iterate", "--iterations", "1", *SCRIPTED],
    "tune-rules": ["tune-rules", "--trees", "t", "--offline", "--quiet"],
    "compare": ["compare", "--trees", "t", "--policy", "default", "--rule", "r.json", "--offline", "--quiet"],
    "report": ["report", "afolder"],
    "optimize-graph": ["optimize-graph", "--method", "gptswarm", *SCRIPTED],
    "aflow-search": ["aflow-search", "--optimizer-backend", "scripted", *SCRIPTED],
}
BAD_FOLDERS = {"": "--out is empty", "  ": "--out is empty", "afile": "--out afile is a file",
               "afile/below": "--out afile/below lies below afile, which is a file"}


@pytest.mark.parametrize("out", BAD_FOLDERS)
@pytest.mark.parametrize("command", FOLDER_COMMANDS)
def test_an_out_folder_that_cannot_be_one_is_refused_by_every_command(refused, command, out):
    assert BAD_FOLDERS[out] in refused(*FOLDER_COMMANDS[command], "--out", out)


@pytest.mark.needs_split("gsm8k/test", "gsm8k/train")  # the questions load before the backend is made
@pytest.mark.parametrize("command", [["run", "--method", "cot", "--backend", "openai"], ["tree", "--backend", "openai"],
                                     ["collect", "--backend", "openai"],
                                     ["iterate", "--backend", "openai", "--iterations", "1"],
                                     ["optimize-graph", "--backend", "openai"],
                                     ["aflow-search", "--backend", "openai", "--optimizer-backend", "scripted"],
                                     ["aflow-search", "--backend", "scripted", "--optimizer-backend", "openai"]])
def test_a_backend_that_cannot_be_made_leaves_no_folder(refused, command):
    """A job that keeps its response cache in its folder makes the folder before its backends: when one of
    them is refused, the folder goes again. The optimiser's missing options are named by its own flags."""
    err = refused(*command, "--limit", "1", "--quiet", "--out", "new/below")
    optimiser = command[-1] == "openai" and command[-2] == "--optimizer-backend"
    assert ("the optimiser's backend 'openai' needs --optimizer-model and --optimizer-base-url" if optimiser else
            "needs --model and --base-url") in err


def test_a_malformed_optimiser_option_is_named_by_its_flag(refused):
    assert "--optimizer-opt takes KEY=VALUE, got 'x'" in refused(
        "aflow-search", "--backend", "scripted", "--optimizer-backend", "scripted", "--optimizer-opt", "x",
        "--out", "new")


@pytest.mark.parametrize("out, message", [("", "--out is empty"), ("afolder", "--out afolder is a folder; name a "
                                          "file, e.g. afolder/bench.json"), ("afile/b.json", "lies below afile")])
def test_bench_out_must_be_a_file_that_can_be_written(refused, monkeypatch, out, message):
    monkeypatch.setattr("deliberation.perf.run_bench", lambda *a, **k: pytest.fail("measured before --out was checked"))
    assert message in refused("bench", "--quick", "--out", out)


def deny_writing_in(monkeypatch, folder: Path) -> None:
    """Make ``folder`` read-only as the checks see it (os.access): tests may run as root, which writes anywhere."""
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: Path(p).resolve() != folder.resolve()
                        and real(p, mode, **kw))


@pytest.mark.parametrize("command", ["run", "tree", "collect", "train", "report"])
def test_an_out_in_a_read_only_folder_is_refused(refused, here, monkeypatch, command):
    deny_writing_in(monkeypatch, here / "afolder")
    err = refused(*FOLDER_COMMANDS[command], "--out", "afolder/new")
    assert "afolder is not writable" in err


@pytest.mark.parametrize("command", ["run", "tree", "collect"])
def test_a_folder_the_file_system_refuses_after_the_check_is_refused(refused, here, monkeypatch, command):
    """The check (os.access) can pass and the write still be refused: it does not see all the file system
    enforces (a network share that squashes root, a security module), and permissions can change in between.
    Making the folder then fails as the file system says, in one line naming the cause, writing nothing. The
    refusal is made where the folder is made, so the test runs as root too (no permission bit stops root)."""
    import errno

    real = os.mkdir

    def mkdir(path, *args, **kwargs):
        if Path(path).resolve().parent == (here / "afolder").resolve():
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    err = refused(*FOLDER_COMMANDS[command], "--out", "afolder/new")
    assert "cannot write afolder/new: it is not writable (another user's?); choose a place you can write to" in err


@pytest.mark.parametrize("out, message", [("afile", "is a file"), ("afile/below", "lies below afile"),
                                          ("  ", "is empty")])
def test_an_experiment_out_that_cannot_be_a_folder_is_refused(experiment_file, refused, here, out, message):
    path = experiment_file('benchmarks = ["gsm8k"]\n')
    path.write_text(path.read_text().replace((here / "exp-out").as_posix(), out))
    err = refused("experiment", str(path), "--quiet")
    assert "exp.toml: out" in err and message in err


@pytest.mark.parametrize("out", ["", "afile", "afile/below"])
def test_the_python_api_checks_out_as_the_command_line_does(files, out):
    from deliberation import run_benchmark

    before = files()
    with pytest.raises(DelibError, match="out "):
        run_benchmark("cot", out, backend="scripted", limit=1)
    assert files() == before


# --- 5. an empty selection is not "everything" -------------------------------------------------------------


@pytest.mark.parametrize("ids", ["", " ", ",", " , ,"])
@pytest.mark.parametrize("command", ["run", "tree", "collect"])
def test_empty_ids_are_refused(refused, command, ids):
    err = refused(*FOLDER_COMMANDS[command], "--out", "o", "--ids", ids)
    assert "--ids: names nothing" in err


@pytest.mark.parametrize("content", [b"", b"\n\n", b" , \n", BOM])
def test_an_id_file_holding_no_id_is_refused(refused, here, content):
    (here / "ids.txt").write_bytes(content)
    err = refused(*FOLDER_COMMANDS["run"], "--out", "o", "--ids", "@ids.txt")
    assert "ids.txt holds no question id" in err


@pytest.mark.parametrize("argv", [
    ["evaluate", "--trees", "t", "--method", "", "--out", "o"],
    ["evaluate", "--trees", "t", "--method", ",", "--out", "o"],
    ["run", "--method", "debate", "--team", " ", *SCRIPTED, "--out", "o"],
    ["compare", "--trees", "", "--policy", "default", "--rule", "r.json", "--out", "o"],
])
def test_other_empty_name_lists_are_refused(refused, argv):
    assert "names nothing" in refused(*argv)


@pytest.mark.parametrize("ids", ["[]", '[" "]'])
def test_an_experiment_selection_with_no_ids_is_refused(experiment_file, refused, ids):
    path = experiment_file(f'benchmarks = ["gsm8k"]\n[selection]\nids = {ids}\n')
    err = refused("experiment", str(path), "--quiet")
    assert "ids must be a non-empty list of question ids" in err


def test_experiment_cuts_naming_nothing_are_refused(experiment_file, refused):
    path = experiment_file('benchmarks = ["gsm8k"]\n')
    assert "names nothing" in refused("experiment", str(path), "--benchmarks", "")
    assert "names nothing" in refused("experiment", str(path), "--methods", ",")


# --- 7. a cache that is a folder, below a file, or read-only -----------------------------------------------


CACHE_COMMANDS = {
    "run": ["run", "--method", "cot", *SCRIPTED, "--out", "o"],
    "tree": ["tree", *SCRIPTED, "--out", "o"],
    "collect": ["collect", *SCRIPTED, "--out", "o"],
    "ask": ["ask", "What is 2 + 2?", "--backend", "scripted"],
}


@pytest.mark.parametrize("command", CACHE_COMMANDS)
def test_a_cache_that_is_a_folder_says_to_name_a_file_in_it(refused, command):
    err = refused(*CACHE_COMMANDS[command], "--cache", "afolder")
    assert "--cache afolder is a folder; name a file, e.g. afolder/responses.sqlite" in err
    assert "delete" not in err


@pytest.mark.parametrize("command", CACHE_COMMANDS)
def test_a_cache_below_a_file_or_in_a_read_only_folder_is_refused(refused, here, monkeypatch, command):
    assert "lies below afile" in refused(*CACHE_COMMANDS[command], "--cache", "afile/c.sqlite")
    deny_writing_in(monkeypatch, here / "afolder")
    err = refused(*CACHE_COMMANDS[command], "--cache", "afolder/c.sqlite")
    assert "afolder is not writable" in err


def test_the_library_names_the_cache_as_its_parameter(here):
    from deliberation.benchmarks.answers import make_backend

    with pytest.raises(DelibError, match="^cache afolder is a folder"):  # the CLI's --cache: above
        make_backend("scripted", cache="afolder")


# --- 8. a backend option left out is named as the flag that passes it ---------------------------------------


@pytest.mark.parametrize("backend, message", [
    (["--backend", "openai"], "backend 'openai' needs --model and --base-url"),
    (["--backend", "openai", "--team", "m1,m2"], "team agent 0: backend 'openai' needs --base-url"),
])
def test_a_backend_option_left_out_is_named_as_its_flag(refused, backend, message):
    assert message in refused("run", "--method", "cot", *SCRIPTED[2:], "--out", "o", *backend)
