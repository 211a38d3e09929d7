"""Own data: JSONL files scored by a built-in benchmark's scorer (benchmarks/own.py), and the text answer type."""

from __future__ import annotations

import json

import pytest

from deliberation import benchmarks
from deliberation.benchmarks import own
from deliberation.benchmarks.text import TextAnswers, extract, normalize
from deliberation.cli.main import main
from deliberation.errors import DelibError


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


NUMERIC = [{"id": "pens", "question": "Pens cost 2 dollars for 3. What do 12 pens cost?", "answer": "8"},
           {"id": "eggs", "question": "A dozen eggs is split among 4 people. How many each?", "answer": "3"},
           {"id": "half", "question": "What is one half as a decimal?", "answer": "0.5"}]
CHOICE = [{"id": "planet", "question": "Which planet is largest?", "choices": ["Mars", "Jupiter", "Venus"],
           "answer": "B"},
          {"id": "gas", "question": "Which gas do plants take in?", "choices": ["Oxygen", "Carbon dioxide"],
           "answer": 1},
          {"id": "sea", "question": "Which is salty?", "choices": ["Lake", "Sea", "River", "Rain"], "answer": "Sea"}]


def test_numeric_file_loads_and_scores_like_gsm8k(tmp_path):
    bench = own.OwnData("numeric", str(write_jsonl(tmp_path / "q.jsonl", NUMERIC)))
    examples = bench.load("test")
    assert [e.id for e in examples] == ["pens", "eggs", "half"] and bench.load("test", limit=1) == examples[:1]
    assert bench.score(examples[0], "so 12 pens cost $8.00.\nThe answer is \\boxed{8}")
    assert bench.score(examples[2], "\\boxed{\\frac{1}{2}}") and not bench.score(examples[0], "\\boxed{9}")
    assert bench.key_for(examples[0], "\\boxed{8.0}") == bench.key_for(examples[0], "Answer: 8") == "8"
    assert bench.format_question(examples[0]).endswith(benchmarks.get("gsm8k").answer_instruction)


def test_an_optimisation_on_a_file_of_ones_own_is_told_how(tmp_path, capsys):
    """A file is one split, test; the optimisations take train by default: the refusal names the split to pass
    and what an optimisation on a test split needs."""
    data = str(write_jsonl(tmp_path / "q.jsonl", NUMERIC))
    assert main(["optimize-graph", "--benchmark", data, "--answer-type", "numeric", "--backend", "scripted",
                 "--out", str(tmp_path / "g")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("is a single split, test: pass --split test (an optimisation on your own questions adds "
                        "--allow-test, and is then measured on other questions)") and "\n" not in err


def test_choice_answers_may_be_a_letter_an_index_or_the_choice_text(tmp_path):
    bench = own.OwnData("choice", str(write_jsonl(tmp_path / "c.jsonl", CHOICE)))
    examples = bench.load("test")
    assert [e.answer for e in examples] == ["B", "B", "B"]
    assert examples[1].choices == ("Oxygen", "Carbon dioxide")
    assert "A. Mars\nB. Jupiter\nC. Venus" in bench.format_question(examples[0])
    assert bench.score(examples[0], "Think...\n\\boxed{B}") and bench.score(examples[0], "The answer is Jupiter")
    assert not bench.score(examples[0], "\\boxed{A}")


def test_math_text_and_code_files_use_their_scorers(tmp_path):
    math = own.OwnData("math", str(write_jsonl(tmp_path / "m.jsonl", [
        {"id": "m1", "question": "Simplify 2/4.", "answer": "\\frac{1}{2}"}])))
    assert math.score(math.load("test")[0], "\\boxed{\\dfrac12}")
    text = own.OwnData("text", str(write_jsonl(tmp_path / "t.jsonl", [
        {"id": "t1", "question": "Capital of France?", "answer": "Paris"}])))
    assert text.score(text.load("test")[0], "Let me think.\nAnswer: **Paris.**")
    assert not text.score(text.load("test")[0], "Answer: the capital is Paris")
    stub = 'def add(a, b):\n    """Return a + b."""\n'
    code = own.OwnData("code", str(write_jsonl(tmp_path / "k.jsonl", [
        {"id": "k1", "question": stub, "tests": "assert add(2, 3) == 5\nassert add(-1, 1) == 0\n"}])))
    example = code.load("test")[0]
    assert example.meta["entry_point"] == "add"
    assert code.score(example, "```python\ndef add(a, b):\n    return a + b\n```")
    assert not code.score(example, "```python\ndef add(a, b):\n    return a - b\n```")


STUB = "def f():\n    pass\n"
VALID = {"numeric": {"id": "ok", "question": "q", "answer": "1"},
         "choice": {"id": "ok", "question": "q", "choices": ["x", "y"], "answer": "A"},
         "code": {"id": "ok", "question": STUB, "tests": "assert f() is None"},
         "text": {"id": "ok", "question": "q", "answer": "x"}}


@pytest.mark.parametrize("answer_type, row, missing", [
    ("numeric", {"id": "a", "question": "q"}, "answer"),
    ("choice", {"id": "a", "question": "q", "answer": "A"}, "choices"),
    ("code", {"id": "a", "question": STUB}, "tests"),
    ("text", {"question": "q", "answer": "x"}, "id"),
])
def test_a_missing_field_names_the_file_and_line(tmp_path, answer_type, row, missing):
    path = write_jsonl(tmp_path / "bad.jsonl", [VALID[answer_type], row])
    with pytest.raises(DelibError) as err:
        own.OwnData(answer_type, str(path)).load("test")
    assert str(err.value).startswith(f"{path}:2: missing field {missing!r} ({answer_type} records need id, question")


@pytest.mark.parametrize("rows, problem", [
    ([{"id": "a", "question": "q", "answer": "eight"}], "is not a number"),
    ([{"id": "a", "question": "q", "answer": "1"}, {"id": "a", "question": "r", "answer": "2"}], "already used"),
])
def test_bad_values_name_the_line(tmp_path, rows, problem):
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(DelibError, match=f"^{path}:{len(rows)}: .*{problem}"):
        own.OwnData("numeric", str(path)).load("test")


def test_an_empty_or_missing_file_is_named(tmp_path):
    with pytest.raises(DelibError, match=f"^{tmp_path / 'e.jsonl'} holds no question"):
        own.OwnData("text", str(write_jsonl(tmp_path / "e.jsonl", []))).load("test")
    with pytest.raises(DelibError, match=f"^benchmark file {tmp_path / 'nope.jsonl'} not found"):
        own.OwnData("text", str(tmp_path / "nope.jsonl")).load("test")


def test_delib_run_on_a_numeric_file_scores_with_the_file_answers(tmp_path, capsys):
    path = write_jsonl(tmp_path / "q.jsonl", NUMERIC)
    out = tmp_path / "run"
    assert main(["run", "--method", "self-consistency", "--benchmark", str(path), "--answer-type", "numeric",
                 "--backend", "scripted", "--quiet", "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["benchmark"] == f"numeric:{path}"
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert [e["example_id"] for e in episodes] == ["pens", "eggs", "half"]
    bench = benchmarks.get(f"numeric:{path}")
    for example, episode in zip(bench.load("test"), episodes):
        assert episode["correct"] == (episode["final_answer"] == bench.answer_key(example.answer))
    assert any(e["correct"] for e in episodes) and "self-consistency on numeric:" in capsys.readouterr().out


def test_delib_run_on_a_choice_file(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", CHOICE)
    out = tmp_path / "run"
    assert main(["run", "--method", "debate", "--benchmark", str(path), "--answer-type", "choice", "--backend",
                 "scripted", "--quiet", "--out", str(out)]) == 0
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 3 and all(e["final_answer"] in ("A", "B", "C", "D") for e in episodes)
    assert all(e["correct"] == (e["final_answer"] == "B") for e in episodes)


@pytest.mark.parametrize("args, message", [
    (["--answer-type", "choice"], ":2: missing field 'choices' (choice records need id, question, choices, answer)"),
    ([], "is a file of your own: say how its answers are scored with --answer-type"),
])
def test_delib_run_refuses_a_bad_file_in_one_line(tmp_path, capsys, args, message):
    path = write_jsonl(tmp_path / "q.jsonl", [CHOICE[0], NUMERIC[0]])
    out = tmp_path / "run"
    assert main(["run", "--method", "cot", "--benchmark", str(path), "--backend", "scripted", "--quiet",
                 "--out", str(out), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and not out.exists()


def test_answer_type_is_refused_for_a_registered_benchmark(tmp_path, capsys):
    assert main(["run", "--method", "cot", "--answer-type", "numeric", "--backend", "scripted", "--out",
                 str(tmp_path / "r")]) == 2
    assert "gsm8k has its own scorer: drop --answer-type" in capsys.readouterr().err


def test_text_keys_normalize_the_final_line():
    assert extract("I think so.\n\n**The Eiffel Tower!**") == "The Eiffel Tower!"
    assert normalize("The Eiffel   Tower!") == normalize("eiffel tower") == "eiffel tower"
    assert extract("Reasoning...\nFinal answer: Blue whale.\nThanks") == "Blue whale."
    assert extract("...") is None and TextAnswers().answer_key("A cat.") == "cat"


def test_benchmark_names_of_own_data_parse_back():
    assert own.parse_name(own.file_name("math", "d/q.jsonl")) == own.OwnName("math", "d/q.jsonl")
    assert own.parse_name(own.ask_name("text")) == own.OwnName("text", None)
    assert own.parse_name("gsm8k") is None and own.parse_name("weird:q.jsonl") is None
    with pytest.raises(DelibError, match="unknown answer type 'prose'; choose one of: numeric, math"):
        own.file_name("prose", "q.jsonl")
