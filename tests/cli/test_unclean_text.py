"""Text that is not clean UTF-8, and JSON too deep or too large to read safely, wherever it enters or is read
back: the project's one policy (errors.py) refuses it, naming where it is and the fix, in one ``delib: error:``
line with exit status 2 and nothing written. Inputs differ from the issue's examples on purpose (a low
surrogate, other bytes, other files and commands)."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from deliberation.backends.cache import CachedBackend
from deliberation.cli.main import main
from deliberation.errors import BadText, DelibError, parse_json, read_json
from deliberation.files import read_gzip_lines
from deliberation.types import Completion, GenerationRequest, Message, strict_json

SCRIPTED = ["--backend", "scripted", "--quiet"]


def run(here: Path, out: str = "run", limit: int = 2) -> Path:
    assert main(["run", "--method", "cot", "--limit", str(limit), "--out", out, *SCRIPTED]) == 0
    return here / out


def own_file(here: Path, *records: str) -> str:
    (here / "mine.jsonl").write_text("".join(r + "\n" for r in records), encoding="utf-8")
    return "mine.jsonl"


GOOD = '{"id": "q1", "question": "What is 2 + 2?", "answer": "4"}'

# --- text that enters: a user's file, the command line, the library ---------------------------------------


@pytest.mark.parametrize("command", [["run", "--method", "cot", "--out", "o"], ["tree", "--out", "o"]])
@pytest.mark.parametrize("escape", ["\\udfff", "\\ud83d\\u0041"])  # a low surrogate; a high one before a letter
def test_a_lone_surrogate_in_a_question_file_is_refused_with_its_line(refused, here, command, escape):
    name = own_file(here, GOOD, f'{{"id": "q2", "question": "Half of {escape} it?", "answer": "6"}}')
    err = refused(*command, "--benchmark", name, "--answer-type", "numeric", "--limit", "2", *SCRIPTED)
    assert "mine.jsonl:2: JSON holding text that is not valid Unicode (a lone surrogate" in err
    assert "fix or re-create that line" in err


def test_an_experiment_naming_a_question_file_with_a_lone_surrogate_is_refused(refused, here, experiment_file):
    name = own_file(here, GOOD, '{"id": "q2", "question": "Pay \\udc80 5?", "answer": "5"}')
    err = refused("experiment", str(experiment_file(f'benchmarks = ["numeric:{name}"]\n')), "--quiet")
    assert "mine.jsonl:2: JSON holding text that is not valid Unicode (a lone surrogate \\udc80" in err


def test_an_escaped_backslash_before_u_is_text_not_a_surrogate(here):
    """``\\\\ud83d`` in JSON is a backslash and "ud83d": valid text, read as such."""
    from deliberation import benchmarks

    name = own_file(here, '{"id": "q1", "question": "Print \\\\ud83d literally: 1 + 1?", "answer": "2"}')
    assert benchmarks.get(f"numeric:{name}").load("test")[0].question == "Print \\ud83d literally: 1 + 1?"


@pytest.mark.parametrize("argv", [
    ["ask", "Quanto fa 2+2? \udcff", "--backend", "scripted"],  # byte 0xff from a terminal that is not UTF-8
    ["run", "--method", "cot", "--limit", "1", "--out", "r\udce8sultats", *SCRIPTED],  # a folder name in Latin-1
    ["ask", "What is 3 + 3?", "--answer-type", "choice", "--choice", "si\udce8ge", "--choice", "6",
     "--backend", "scripted"],
])
def test_an_argument_that_is_not_utf8_is_refused_naming_it(refused, argv):
    err = refused(*argv)
    assert "is not UTF-8 text (byte 0x" in err and "type it in a UTF-8 terminal" in err


def test_the_library_refuses_an_out_folder_named_with_a_byte_that_is_not_utf8(files):
    from deliberation import run_benchmark

    before = files()
    with pytest.raises(DelibError, match="out ergebnis-\\\\xfc is not UTF-8 text \\(byte 0xfc"):
        run_benchmark("cot", "ergebnis-\udcfc", backend="scripted", limit=1)
    assert files() == before


def test_the_library_refuses_a_question_that_is_not_valid_unicode():
    from deliberation import deliberate

    with pytest.raises(DelibError, match="the question is not valid Unicode"):
        deliberate("What is \udbff 1 + 1?", "cot", backend="scripted")


# --- text read back: episodes, run folders, stores, rollouts, caches ---------------------------------------


@pytest.mark.parametrize("bad", [b"\xc3\x28", b"\xf0\x9f\x98", b"\xed\xa0\x80"])  # bad continuation, cut emoji,
def test_bad_bytes_inside_an_episodes_line_are_refused_by_report_and_resume(refused, here, bad):  # a surrogate
    folder = run(here)
    path = folder / "episodes.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"text": "', b'"text": "' + bad, 1)
    path.write_bytes(b"\n".join(lines))
    before = path.read_bytes()
    for argv in (["report", str(folder), "--out", "rep"], ["run", "--method", "cot", "--limit", "3", "--out",
                                                         str(folder), *SCRIPTED]):
        err = refused(*argv)
        assert f"{path} line 2 is not UTF-8 text (byte 0x{bad[0]:02x}" in err and "delete that line" in err
    assert path.read_bytes() == before


def test_a_torn_last_line_cut_inside_a_character_is_cut_off_on_resume(here):
    """A run killed mid-append can cut a character in two: the torn line is never decoded, only dropped."""
    folder = run(here, limit=1)
    path = folder / "episodes.jsonl"
    path.write_bytes(path.read_bytes() + '{"example_id": "gsm8k/test/1", "text": "caf\u00e9'.encode()[:-1])
    assert main(["report", str(folder), "--out", "rep"]) == 0  # read only: the torn line is ignored
    assert main(["run", "--method", "cot", "--limit", "2", "--out", str(folder), *SCRIPTED]) == 0
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2


def test_a_lone_surrogate_escape_in_an_episodes_line_is_refused(refused, here):
    folder = run(here)
    path = folder / "episodes.jsonl"
    row = json.loads(path.read_text().splitlines()[0])
    row["turns"][0]["text"] = "cut \udc00 here"
    path.write_text(json.dumps(row) + "\n" + path.read_text().split("\n", 1)[1], encoding="utf-8")
    err = refused("report", str(folder), "--out", "rep")
    assert f"{path} line 1 is not an episode (JSON holding text that is not" in err


def test_a_run_folder_named_with_a_byte_that_is_not_utf8_is_refused_by_report(refused, here):
    run(here, "all/plain")
    os.rename(os.fsencode(here / "all" / "plain"), os.fsencode(here / "all") + b"/r\xe9sultat")
    err = refused("report", "all", "--out", "rep")
    assert "all/r\\xe9sultat has a name that is not UTF-8 text (byte 0xe9" in err and "rename it" in err


def test_a_config_json_holding_a_lone_surrogate_is_damaged(refused, here):
    folder = run(here)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "command": "delib \udabc"}))
    err = refused("run", "--method", "cot", "--limit", "2", "--out", str(folder), *SCRIPTED)
    assert "config.json is damaged" in err


def test_gzip_lines_with_a_lone_surrogate_are_refused_by_line(tmp_path):
    """Tree stores and rollout files: a line that is valid JSON spelling a lone surrogate is corrupt."""
    path = tmp_path / "trees.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"example_id": "a"}\n') + gzip.compress(b'{"example_id": "\\udd00"}\n'))
    with pytest.raises(DelibError, match="corrupt after byte .* lone surrogate .*delib tree"):
        read_gzip_lines(path, "delib tree")


class Echo:
    """Answers "echo", counting its calls."""

    name, model, supports_logprobs = "echo", "m", False

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        self.calls += 1
        return [Completion("echo", 3, 1) for _ in requests]

    def close(self) -> None:
        pass


def test_a_cache_row_holding_a_lone_surrogate_is_damaged_and_generated_again(tmp_path):
    inner = Echo()
    cache = CachedBackend(inner, tmp_path / "c.sqlite")
    request = GenerationRequest(messages=(Message("user", "q"),))
    cache.generate([request])
    with cache._conn:  # a row written by an older version from a server's broken answer
        cache._conn.execute("UPDATE completions SET completion = replace(completion, 'echo', '\\udc41')")
        cache._conn.execute("DELETE FROM checksums")
    assert cache.generate([request])[0].text == "echo" and inner.calls == 2


def test_writers_refuse_a_lone_surrogate_and_keep_valid_escapes():
    """No file is written that the readers would refuse; an emoji (a valid pair) is written as before."""
    for ascii_only in (True, False):
        with pytest.raises(BadText, match="lone surrogate"):
            strict_json({"text": "x\ud83d"}, ensure_ascii=ascii_only)
    assert strict_json({"text": "\U0001F600"}) == '{"text": "\\ud83d\\ude00"}'
    assert parse_json(strict_json({"text": "\U0001F600"})) == {"text": "\U0001F600"}


# --- JSON too deep or too large ---------------------------------------------------------------------------


@pytest.mark.parametrize(("extra", "said"), [
    ("[" * 40 + "]" * 40, "JSON nested more than 32 levels deep"),
    ('{"a":' * 200_000 + "1" + "}" * 200_000, "JSON nested too deeply to read"),
    ("9" * 5000, "JSON holding a number of more than 4300 digits"),
    ("NaN", "JSON holding NaN"),
    ("-Infinity", "JSON holding -Infinity"),
])
def test_json_too_deep_or_too_large_in_a_question_file_is_one_line(refused, here, extra, said):
    name = own_file(here, GOOD, f'{{"id": "q2", "question": "1 + 1?", "answer": "2", "notes": {extra}}}')
    err = refused("run", "--method", "cot", "--benchmark", name, "--answer-type", "numeric", "--out", "o",
                  *SCRIPTED)
    assert f"mine.jsonl:2: {said}" in err


def test_deep_json_in_an_episodes_line_is_one_line(refused, here):
    folder = run(here)
    path = folder / "episodes.jsonl"
    path.write_text(path.read_text() + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    err = refused("report", str(folder), "--out", "rep")
    assert f"{path} line 3 is not an episode (JSON nested too deeply to read)" in err


def test_a_deep_experiment_file_is_one_line(refused, experiment_file):
    path = experiment_file("x = " + "[" * 50_000 + "]" * 50_000 + "\n")
    assert "nests arrays or tables too deeply to read" in refused("experiment", str(path), "--quiet")


def test_a_deep_rule_file_is_one_line(tmp_path):
    """Files such as --rule are read by ``read_json``: one line naming the file."""
    path = tmp_path / "rule.json"
    path.write_text("[" * 300_000 + "]" * 300_000)
    with pytest.raises(DelibError, match="rule.json is JSON nested too deeply to read; restore it"):
        read_json(path)
