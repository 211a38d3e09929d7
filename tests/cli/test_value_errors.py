"""Values that once ended in a traceback or a silent wrong run: backend options of the wrong type, numbers
that are NaN, infinite or out of range (and JSON that could hold them), and questions that are empty, lack
their options or cannot fit the model. Each is one ``delib: error:`` line, exit 2, nothing written."""

from __future__ import annotations

import json
import math

import pytest

from deliberation.cli.main import main
from deliberation.errors import DelibError

# --- 3. backend options of the wrong type --------------------------------------------------------------------


def fake_model(folder) -> list[str]:
    """llamacpp with a model file that does not exist: a check that failed to fire would fail loading it."""
    return ["--backend", "llamacpp", "--model", str(folder / "none.gguf")]


OPTION_CASES = [  # backend flags, --backend-opt, what the message says the option takes
    (["--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"], "timeout_s=abc",
     "option timeout_s takes a finite number (default 60.0), got 'abc'"),
    (["--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"], "max_retries=1.5",
     "option max_retries takes an integer"),
    (["--backend", "scripted"], "p_break=nan", "option p_break takes a finite number (default 0.1), got nan"),
    (["--backend", "scripted"], "conf_right=inf", "option conf_right takes a finite number"),
    ("llamacpp", "n_ctx=2.5", "option n_ctx takes an integer (default 8192), got '2.5'"),
    ("llamacpp", "verbose=maybe", "option verbose takes true or false"),
    ("llamacpp", "n_threads=many", "option n_threads takes an integer or none"),
]
OPTION_COMMANDS = {
    "run": ["run", "--method", "cot", "--limit", "1", "--quiet", "--out", "o"],
    "tree": ["tree", "--limit", "1", "--quiet", "--out", "o"],
    "collect": ["collect", "--limit", "1", "--quiet", "--out", "o"],
    "ask": ["ask", "What is 2 + 2?"],
}


@pytest.mark.parametrize("backend, option, message", OPTION_CASES)
@pytest.mark.parametrize("command", [  # collect's default split, GSM8K train, is read before the options
    pytest.param(name, marks=pytest.mark.needs_split("gsm8k/train")) if name == "collect" else name
    for name in OPTION_COMMANDS])
def test_a_backend_option_of_the_wrong_type_names_the_type(refused, here, command, backend, option, message):
    flags = fake_model(here) if backend == "llamacpp" else backend
    err = refused(*OPTION_COMMANDS[command], *flags, "--backend-opt", option)
    assert message in err


def test_a_text_option_keeps_digits_as_text_and_none_as_none():
    """The declared type decides, not the look of the value: chat_format=123 is text, n_threads=none is None."""
    from deliberation.cli.main import build_parser
    from deliberation.cli.common import backend_options

    args = build_parser().parse_args(["ask", "q", "--backend-opt", "chat_format=123", "--backend-opt",
                                      "n_threads=none", "--backend-opt", "n_ctx=4096"])
    assert backend_options(args) == {"chat_format": "123", "n_threads": None, "n_ctx": 4096}


@pytest.mark.parametrize("value, message", [('"abc"', "takes a finite number"), ("nan", "got nan"),
                                            ("true", "got True")])
def test_an_experiment_backend_option_of_the_wrong_type_is_refused(experiment_file, refused, value, message):
    path = experiment_file('benchmarks = ["gsm8k"]\n')
    path.write_text(path.read_text() + f"p_fix = {value}\n")
    err = refused("experiment", str(path), "--quiet")
    assert "option p_fix" in err and message in err


def test_the_python_api_checks_option_types():
    from deliberation.backends import check_options

    with pytest.raises(DelibError, match="option timeout_s takes a finite number"):
        check_options("openai", {"model": "m", "base_url": "http://u", "timeout_s": "abc"})
    check_options("openai", {"model": "m", "base_url": "http://u", "timeout_s": 5})  # an int is a number


# --- 4. NaN, infinity and out-of-range numbers ---------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-0.5"])
@pytest.mark.parametrize("command", OPTION_COMMANDS)
def test_temperature_must_be_a_finite_number_at_least_0(refused, command, value):
    err = refused(*OPTION_COMMANDS[command], "--backend", "scripted", f"--temperature={value}")  # -inf: not a flag
    assert "--temperature must be a finite number, at least 0" in err


@pytest.mark.parametrize("value", ["2", "-0.1", "nan", "inf"])
@pytest.mark.parametrize("argv", [
    [*OPTION_COMMANDS["run"], "--backend", "scripted", "--method", "confidence-threshold"],
    ["ask", "What is 2 + 2?", "--backend", "scripted", "--method", "confidence-threshold"],
    ["evaluate", "--trees", "t", "--method", "confidence-threshold", "--out", "o"],
])
def test_the_confidence_threshold_is_a_probability(refused, argv, value):
    err = refused(*argv, "--confidence-threshold", value)
    assert "--confidence-threshold must be a finite number, from 0 to 1" in err


@pytest.mark.parametrize("argv, message", [
    (["train", "--rollouts", "r", "--out", "o", "--lr", "inf"], "lr must be a finite number, got inf"),
    (["train", "--rollouts", "r", "--out", "o", "--kl-coef", "inf"], "kl_coef must be a finite number"),
    (["train", "--rollouts", "r", "--out", "o", "--tau", "inf"], "tau must be a finite number"),
    (["train", "--rollouts", "r", "--out", "o", "--token-cost-coef", "inf"], "token_cost_coef must be a finite"),
])
def test_training_floats_refuse_nan_and_infinity(refused, argv, message):
    assert message in refused(*argv)


@pytest.mark.parametrize("table", ["[engine]\ntemperature = nan\n", "[engine]\ntemperature = inf\n",
                                   '[[variants]]\nlabel = "ct"\nmethod = "confidence-threshold"\n'
                                   "confidence_threshold = inf\n"])
def test_an_experiment_file_cannot_hold_nan_or_infinity(experiment_file, refused, table):
    """TOML has nan and inf literals; they are refused before any cell writes."""
    err = refused("experiment", str(experiment_file(f'benchmarks = ["gsm8k"]\n{table}')),
                  "--quiet")
    assert "must be a finite number" in err


def test_json_the_project_writes_is_strict(tmp_path):
    """NaN never reaches a file silently: the writers raise instead of writing a bare NaN."""
    from deliberation.files import append_gzip_line, write_json_atomic

    for write in (write_json_atomic, append_gzip_line):
        with pytest.raises(ValueError, match="not JSON compliant"):
            write(tmp_path / "x", {"value": math.nan})


# --- 6. questions that are empty, lack their options, or cannot fit the model --------------------------------


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_an_empty_question_is_refused(refused, question):
    assert "the question is empty" in refused("ask", question, "--backend", "scripted")


@pytest.mark.parametrize("question, listed", [
    ("Which planet is largest?", "Which planet is largest? A) Mars B) Jupiter"),
    ("Is it A. or not?", "Is it A. or not?\nA. yes\nB. no"),
    ("Pick (A) Mars or nothing", "Pick (A) Mars or (B) Venus"),
])
def test_a_choice_question_without_options_is_refused(refused, capsys, question, listed):
    err = refused("ask", question, "--answer-type", "choice", "--backend", "scripted")
    assert "a choice question needs its options: pass --choice TEXT 2 to 4 times" in err
    assert main(["ask", listed, "--answer-type", "choice", "--backend", "scripted"]) == 0  # labelled in it: asked
    assert main(["ask", question, "--answer-type", "choice", "--choice", "x", "--choice", "y", "--backend",
                 "scripted"]) == 0


@pytest.mark.parametrize("size, window", [(10_000_000, None), (40_000, None), (9_000, "2048")])
def test_a_question_beyond_the_context_window_names_its_size_and_the_window(refused, here, size, window):
    opts = ["--backend-opt", f"n_ctx={window}"] if window else []
    err = refused("ask", "x" * size, *fake_model(here), *opts)
    assert "the question is " in err and f"context window of {window or 8192} tokens" in err
    assert "characters" in err and "shorten it to well under" in err


def test_a_run_names_the_question_that_cannot_fit(refused, here):
    (here / "q.jsonl").write_text(json.dumps({"id": "small", "question": "1 + 1?", "answer": "2"}) + "\n"
                                  + json.dumps({"id": "huge", "question": "1 + " * 20_000 + "1?", "answer": "1"})
                                  + "\n")
    err = refused("run", "--method", "cot", "--benchmark", "q.jsonl", "--answer-type", "numeric",
                  *fake_model(here), "--out", "o", "--quiet")
    assert "question huge is " in err and "context window of 8192" in err


def test_deliberate_refuses_what_delib_ask_refuses(files, here):
    from deliberation import deliberate

    for question, kwargs, message in [
            (" ", {"backend": "scripted"}, "the question is empty"),
            ("Which?", {"backend": "scripted", "answer_type": "choice"}, "needs its options"),
            ("x" * 100_000, {"backend": "llamacpp", "model": str(here / "none.gguf")}, "context window of 8192")]:
        with pytest.raises(DelibError, match=message):
            deliberate(question, **kwargs)
    assert files() == ["afile", "afolder"]
