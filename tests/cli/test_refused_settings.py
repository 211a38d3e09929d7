"""Settings that once ran as something other than what was typed, or ended in a traceback: a negative seed, a
list with an empty item, an unknown prompt set, a server address that is no URL, a .gz file that is not gzip,
a replay naming questions its store does not hold, an --out holding another program's config.json. Each is one
``delib: error:`` line, exit status 2, and nothing written (the ``refused`` fixture checks all three)."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from deliberation.backends.team import team_options
from deliberation.cli.main import main
from deliberation.config import EngineConfig, Selection
from deliberation.errors import DelibError

SCRIPTED = ["--backend", "scripted", "--limit", "1", "--quiet"]
RUN = ["run", "--method", "cot", "--out", "o", *SCRIPTED]
LINE = b'{"id": "q1", "question": "What is 2 + 2?", "answer": "4"}\n'


@pytest.mark.parametrize(("flags", "said"), [
    (["--seed", "-1"], "--seed must be at least 0"),
    (["--subset", "1", "--subset-seed", "-1"], "--subset-seed must be at least 0"),
    (["--subset-seed", "3"], "--subset-seed seeds --subset only; pass --subset N with it"),
    (["--team", "a,,b"], "has an empty item ('a,,b'); remove the extra comma"),
    (["--team", "a, ,b"], "has an empty item"),
    (["--prompts", "bogus"], "unknown prompt set 'bogus'; choose one of: continuation, standalone"),
])
def test_a_setting_that_would_run_otherwise_is_refused_before_anything_is_written(refused, here, flags, said):
    assert said in refused(*RUN, *flags)


def test_the_python_calls_refuse_them_too():
    with pytest.raises(DelibError, match="--seed must be at least 0"):
        EngineConfig(seed=-1)
    with pytest.raises(DelibError, match="--subset-seed must be at least 0"):
        Selection(subset=2, subset_seed=-1)
    with pytest.raises(DelibError, match=r"team 'a,b' is one string; pass a list of model names.*\['a', 'b'\]"):
        team_options("a,b", "openai", {})  # iterated, it was a team of three agents named a, ',' and b
    with pytest.raises(DelibError, match="names an empty model"):
        team_options(["a", " "], "openai", {})


@pytest.mark.parametrize("url", ["127.0.0.1:8000/v1", "htp:/bad url", "http://", "localhost", "http://[::1/v1"])
def test_a_server_address_that_is_no_http_url_is_refused_before_the_run_folder(refused, here, url):
    err = refused("run", "--method", "cot", "--backend", "openai", "--model", "m", "--base-url", url, "--limit", "1",
                  "--out", "o")
    assert f"--base-url {url!r} is not an http(s) URL with a host" in err


def test_an_empty_key_variable_name_is_refused(refused, here):
    assert "option api_key_env is empty" in refused(
        "run", "--method", "cot", "--backend", "openai", "--model", "m", "--base-url", "http://localhost:8000/v1",
        "--backend-opt", "api_key_env=", "--limit", "1", "--out", "o")


@pytest.mark.parametrize("body", [b"not gzip at all", gzip.compress(LINE * 200, mtime=0)[:60]],
                         ids=["not gzip", "cut short"])  # one id in every process: test workers must collect alike
def test_a_gz_question_file_that_is_not_whole_gzip_is_named(refused, here, body):
    (here / "mine.jsonl.gz").write_bytes(body)
    err = refused("run", "--method", "cot", "--benchmark", "mine.jsonl.gz", "--answer-type", "numeric", "--out", "o",
                  *SCRIPTED)
    assert "mine.jsonl.gz is not a whole gzip file" in err and "gzip -t mine.jsonl.gz" in err


@pytest.mark.parametrize("text", ['{"architectures": ["X"]}', "[1, 2]", "not json", '["method", "engine"]'])
def test_an_out_holding_a_config_json_no_run_wrote_is_left_alone(refused, here, text):
    (here / "model").mkdir()
    (here / "model" / "config.json").write_text(text)
    err = refused("run", "--method", "cot", "--out", "model", *SCRIPTED)
    assert "--out model holds a config.json that no delib run wrote" in err
    assert (here / "model" / "config.json").read_text() == text


def test_a_run_stopped_before_its_first_episode_is_taken_again(here):
    assert main(RUN) == 0
    (here / "o" / "episodes.jsonl").unlink()
    (here / "o" / "summary.json").unlink()
    assert main(RUN) == 0 and (here / "o" / "episodes.jsonl").is_file()


@pytest.fixture
def store(here):
    assert main(["tree", "--out", "t", "--backend", "scripted", "--limit", "2", "--quiet"]) == 0
    return "t"


@pytest.mark.needs_split("gsm8k/test")
@pytest.mark.parametrize(("flags", "said"), [
    (["--ids", "gsm8k/test/0,gsm8k/test/100"], "--ids names 1 question not among the built questions of t "
                                                "(e.g. gsm8k/test/100)"),
    (["--ids", "gsm8k/test/0,gsm8k/test/1", "--questions", "1"], "not among the first 1 built questions of t"),
    (["--ids", "gsm8k/test/0,gsm8k/test/0"], "--ids names 'gsm8k/test/0' twice"),
    (["--agents", "0"], "--agents must be at least 1"),
    (["--questions", "0"], "--questions must be at least 1"),
    (["--questions", "-1"], "--questions must be at least 1"),
])
def test_a_replay_that_would_answer_other_questions_or_another_team_is_refused(refused, store, flags, said):
    method = ["--method", "self-consistency"] if "--agents" in flags else ["--method", "cot"]
    assert said in refused("evaluate", "--trees", store, *method, *flags, "--offline", "--quiet", "--out", "e")


@pytest.mark.needs_split("gsm8k/test")
def test_a_method_named_twice_is_refused_not_replayed_twice_into_one_folder(refused, store):
    assert "--method names 'cot' twice" in refused("evaluate", "--trees", store, "--method", "cot,cot", "--offline",
                                                   "--quiet", "--out", "e")


@pytest.mark.needs_split("gsm8k/test")
def test_ids_the_store_holds_still_replay(store, here):
    assert main(["evaluate", "--trees", store, "--method", "cot", "--ids", "gsm8k/test/1", "--offline", "--quiet",
                 "--out", "e"]) == 0
    assert [json.loads(x)["example_id"] for x in (here / "e" / "episodes.jsonl").read_text().splitlines()] == [
        "gsm8k/test/1"]


@pytest.mark.parametrize(("record", "said"), [
    ({"id": [1, 2], "question": "q?", "answer": "4"}, "field 'id' must be text (or a number), got list [1, 2]"),
    ({"id": "a", "question": {"x": 1}, "answer": "4"}, "field 'question' must be text (or a number), got dict"),
    ({"id": "a", "question": "   ", "answer": "4"}, "missing field 'question'"),
    ({"id": "a", "question": "q?", "answer": True}, "field 'answer' must be text (or a number), got bool True"),
])
def test_an_own_record_whose_field_is_no_text_is_refused_not_printed_as_python(refused, here, record, said):
    (here / "mine.jsonl").write_text(json.dumps(record) + "\n")
    err = refused("run", "--method", "cot", "--benchmark", "mine.jsonl", "--answer-type", "numeric", "--out", "o",
                  *SCRIPTED)
    assert f"mine.jsonl:1: {said}" in err


@pytest.mark.parametrize(("choices", "said"), [
    (["Mars", "Mars", "Venus"], "choice 'Mars' is given twice"),
    (["Mars", " ", "Venus"], "a choice is empty"),
    (["Mars", None, "Venus"], "choices must be texts (or numbers)"),
    ([3, "3", 5], "choice '3' is given twice"),
])
def test_an_own_choice_record_with_options_nobody_can_tell_apart_is_refused(refused, here, choices, said):
    record = {"id": "a", "question": "Which planet?", "choices": choices, "answer": "Mars"}
    (here / "mine.jsonl").write_text(json.dumps(record) + "\n")
    assert said in refused("run", "--method", "cot", "--benchmark", "mine.jsonl", "--answer-type", "choice",
                           "--out", "o", *SCRIPTED)


def test_an_own_record_with_a_number_for_its_id_and_answer_runs(here):
    (here / "mine.jsonl").write_text(json.dumps({"id": 7, "question": "What is 9 + 9?", "answer": 18}) + "\n")
    assert main(["run", "--method", "cot", "--benchmark", "mine.jsonl", "--answer-type", "numeric", "--out", "o",
                 *SCRIPTED]) == 0
    assert json.loads((here / "o" / "episodes.jsonl").read_text().splitlines()[0])["example_id"] == "7"


@pytest.mark.parametrize(("flags", "said"), [
    (["--backend-opt", "p_break=0.1", "--backend-opt", "p_break=0.3"], "--backend-opt gives p_break twice"),
    (["--model", "a", "--backend-opt", "model=b"], "--model and --backend-opt model= both give the model"),
])
def test_a_backend_option_given_twice_is_refused_not_resolved_silently(refused, here, flags, said):
    assert said in refused(*RUN, *flags)


def test_the_optimiser_option_given_twice_is_named_by_the_optimiser_flags(refused, here):
    assert "--optimizer-model and --optimizer-opt model= both give the model" in refused(
        "aflow-search", "--backend", "scripted", "--optimizer-backend", "scripted", "--optimizer-model", "a",
        "--optimizer-opt", "model=b", "--limit", "1", "--out", "o")


@pytest.mark.parametrize(("option", "said"), [
    ("skills=0.5", "scripted option skills takes a list of numbers, one an agent"),
    ("skills=abc", "got 'abc'"),
    ("skills=", "got ''"),
    ("skills=[0.5,NaN]", "got '[0.5,NaN]'"),  # strict JSON: NaN is no number
    ("p_break=5", "p_break must be a finite number, from 0 to 1"),
])
def test_a_scripted_option_out_of_its_range_is_refused_before_the_run_folder(refused, here, option, said):
    assert said in refused(*RUN, "--backend-opt", option)


def test_a_list_option_is_read_as_json(here):
    assert main([*RUN, "--backend-opt", "skills=[1,1,1]"]) == 0
    assert json.loads((here / "o" / "episodes.jsonl").read_text().splitlines()[0])["correct"] is True


@pytest.mark.needs_split("gsm8k/test")
def test_run_method_refuses_an_option_its_method_does_not_read_as_delib_run_does():
    from deliberation import load_benchmark, make_backend, run_method

    example = load_benchmark("gsm8k").load("test", limit=1)[0]
    with pytest.raises(DelibError, match="--policy means nothing to method cot; drop it"):
        run_method("cot", example, make_backend("scripted"), policy="default")


@pytest.mark.parametrize(("given", "said"), [
    ("@", "the id file's path is empty; write --ids @FILE"),
    ("@nofile.txt", "id file nofile.txt not found; write --ids @FILE"),
    ("@afolder", "id file afolder is a folder, not a file"),
])
def test_an_id_file_that_is_not_there_is_named_with_the_fix(refused, here, given, said):
    assert said in refused(*RUN, "--ids", given)


@pytest.mark.parametrize("command", [["collect", "--out", "c"], ["iterate", "--iterations", "1", "--out", "c"]])
def test_collecting_with_no_deliberation_round_is_refused_before_any_call(refused, here, command):
    """Round 0 takes no decision: a collection with --rounds 0 paid for every call and held nothing to train."""
    err = refused(*command, "--rounds", "0", *SCRIPTED)
    assert "--rounds must be at least 1 to collect a decision (round 0 takes none) (got 0)" in err
    assert not (here / "c").exists()


def test_a_negative_allocator_seed_is_one_line_not_a_numpy_traceback():
    from deliberation.rl.allocation.config import AllocatorTraining

    with pytest.raises(DelibError, match="--seed must be at least 0"):
        AllocatorTraining(seed=-1)


HUGE = str(2 ** 70)


@pytest.mark.parametrize("command", [
    ["run", "--method", "self-consistency", "--agents", HUGE, "--out", "o", *SCRIPTED],
    ["run", "--method", "cot", "--agents", "1025", "--out", "o", *SCRIPTED],
    ["tree", "--samples", HUGE, "--out", "t", *SCRIPTED],
    ["collect", "--joint-actions", HUGE, "--out", "c", *SCRIPTED],
    ["tune-votes", "--trees", "t", "--agents", HUGE, "--offline", "--out", "v", "--quiet"],
    ["evaluate", "--trees", "t", "--method", "self-consistency", "--agents", HUGE, "--offline", "--out", "e",
     "--quiet"]])
def test_a_count_of_answers_beyond_any_method_is_one_line_not_an_overflow(refused, here, command):
    """A count of answers drawn per question far too large (a typo) used to overflow an index in a traceback,
    leaving the run's folder behind, or to list requests until memory ran out."""
    assert "must be at most 1024 (got " in refused(*command)


@pytest.mark.needs_split("gsm8k/test")
def test_a_limit_beyond_any_split_means_every_question():
    """A limit larger than any index used to be an islice traceback where the split's file is read."""
    from deliberation import benchmarks

    gsm8k = benchmarks.get("gsm8k")
    assert gsm8k.load("test", limit=int(HUGE)) == gsm8k.load("test")


@pytest.mark.needs_split("gsm8k/test")
def test_learning_from_a_test_store_is_refused_unless_asked_knowingly(refused, here, capsys):
    """Tuning a rule or vote temperatures, or training a policy, on a store of test questions learns what it is
    then measured on: refused, before any replay, with the way to do it knowingly."""
    assert main(["tree", "--limit", "12", "--out", "store", *SCRIPTED[:2], "--quiet"]) == 0
    for command in (["tune-rules", "--trees", "store", "--rounds", "1", "--offline", "--out", "t", "--quiet"],
                    ["tune-votes", "--trees", "store", "--offline", "--out", "v", "--quiet"],
                    ["train", "--algo", "sft", "--trees", "store", "--epochs", "1", "--out", "p"]):
        said = refused(*command)
        assert "store holds gsm8k test questions: a " in said
        assert "(or pass --allow-test to do it knowingly, and measure on other questions)" in said
        assert main([*command, "--allow-test"]) == 0
    assert "--allow-test are about --trees stores; pass --trees or drop them" in refused(
        "train", "--algo", "sft", "--rollouts", "r", "--allow-test", "--out", "p")  # nothing it would allow


@pytest.mark.parametrize(("settings", "said"), [({"agents": "3"}, "--agents must be a whole number (got '3')"),
                                                 ({"agents": 3.5}, "--agents must be a whole number (got 3.5)"),
                                                 ({"rounds": None}, "--rounds must be a whole number (got None)"),
                                                 ({"seed": True}, "--seed must be a whole number (got True)"),
                                                 ({"temperature": "0.7"},
                                                  "--temperature must be a number (got '0.7')")])
def test_a_python_caller_s_value_of_the_wrong_type_is_named_not_a_typeerror_deep_inside(settings, said):
    """The CLI's flags parse their types; the Python API takes what it is given: 3.5 agents used to be accepted
    (and fail later), "3" to fail in a comparison."""
    with pytest.raises(DelibError, match=f"^{re.escape(said)}$"):
        EngineConfig(**settings)


def test_a_tree_asked_for_zero_samples_is_refused_not_built_with_the_default(refused):
    """--samples 0 built as many samples as agents: 0 stood for "not given" inside the build settings."""
    err = refused("tree", "--benchmark", "gsm8k", "--samples", "0", "--out", "o", *SCRIPTED)
    assert "--samples must be at least 1 (got 0)" in err
