"""Bad input: one line on stderr naming the problem, exit status 2, nothing written as finished."""

import argparse
import json

import pytest
import torch

from deliberation import methods
from deliberation.cli.main import build_parser, main


def bad(tmp_path, capsys, *args):
    out = tmp_path / "run"
    code = main(["run", "--backend", "scripted", "--limit", "3", "--out", str(out), "--quiet", *args])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("delib: error:")
    assert not (out / "episodes.jsonl").exists() and not (out / "summary.json").exists()
    return err


def test_zero_agents(tmp_path, capsys):
    assert "--agents" in bad(tmp_path, capsys, "--method", "debate", "--agents", "0")


def test_negative_rounds(tmp_path, capsys):
    assert "--rounds" in bad(tmp_path, capsys, "--method", "debate", "--rounds", "-1")


def test_missing_policy_file(tmp_path, capsys):
    err = bad(tmp_path, capsys, "--method", "mpdf", "--policy", str(tmp_path / "nope.pt"))
    assert "nope.pt" in err


def test_policy_of_wrong_shape(tmp_path, capsys):
    path = tmp_path / "wrong.pt"
    torch.save({"something": torch.zeros(3)}, path)
    assert "wrong.pt" in bad(tmp_path, capsys, "--method", "mpdf", "--policy", str(path))


def test_unknown_split_lists_valid_ones(tmp_path, capsys):
    err = bad(tmp_path, capsys, "--method", "cot", "--split", "dev")
    assert err == "delib: error: gsm8k has no split 'dev'; choose one of: train, test"
    assert not (tmp_path / "run").exists()


def test_an_option_the_method_does_not_read_is_refused(tmp_path, capsys):
    """--policy and --confidence-threshold are refused, not ignored, by methods that read neither."""
    err = bad(tmp_path, capsys, "--method", "debate", "--policy", "default")
    readers = ", ".join(methods.taking("policy"))
    assert "mpdf" in readers and "debate" not in readers
    assert err == f"delib: error: --policy means nothing to method debate; drop it (it applies to: {readers})"
    err = bad(tmp_path, capsys, "--method", "cot", "--confidence-threshold", "0.5")
    assert "applies to: mpdf, confidence-threshold" in err and not (tmp_path / "run").exists()


def test_unknown_method_lists_the_valid_ones(tmp_path, capsys):
    err = bad(tmp_path, capsys, "--method", "telepathy")
    assert "telepathy" in err and "debate" in err and not (tmp_path / "run").exists()


def test_unknown_backend_and_benchmark(tmp_path, capsys):
    assert "scripted" in bad(tmp_path, capsys, "--method", "cot", "--backend", "nope")
    assert "gsm8k" in bad(tmp_path, capsys, "--method", "cot", "--benchmark", "nope")
    assert not (tmp_path / "run").exists()


def test_unknown_model_lists_the_catalogue(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["run", "--method", "cot", "--model", "gpt-17", "--limit", "1", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "qwen2.5-coder-1.5b" in err
    assert not (out / "episodes.jsonl").exists()


def test_settings_change_into_same_directory_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    common = ["--backend", "scripted", "--limit", "2", "--out", str(out), "--quiet"]
    assert main(["run", "--method", "cot", *common]) == 0
    assert main(["run", "--method", "debate", *common]) == 2
    assert "other settings" in capsys.readouterr().err


def test_unknown_backend_option_lists_the_valid_ones(tmp_path, capsys):
    err = bad(tmp_path, capsys, "--method", "cot", "--backend-opt", "warp_drive=1")
    assert "warp_drive" in err and "skills" in err


def test_zero_limit(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--method", "cot", "--backend", "scripted", "--limit", "0", "--out", str(tmp_path / "run")])
    assert exit_.value.code == 2 and "--limit" in capsys.readouterr().err and not (tmp_path / "run").exists()


def test_specs_built_in_code_check_their_counts():
    """Library callers get the same errors as the command line (RunSpec, CollectSpec)."""
    from deliberation.errors import DelibError
    from deliberation.rl.collect import CollectSpec
    from deliberation.runs.runner import RunSpec

    for make, kwargs in ((RunSpec, {"method": "cot"}), (CollectSpec, {})):
        for bad_field in ({"concurrency": 0}, {"limit": 0}):
            with pytest.raises(DelibError, match=f"{next(iter(bad_field))} must be at least 1"):
                make(**kwargs, **bad_field)


@pytest.mark.parametrize("name,value,minimum,why,expected", [
    ("--agents", 0, 1, "", "--agents must be at least 1 (got 0)"),
    ("--joint-actions", 1, 2, "to rank rewards", "--joint-actions must be at least 2 to rank rewards (got 1)"),
])
def test_require_at_least_names_the_bound_and_the_value(name, value, minimum, why, expected):
    from deliberation.errors import DelibError, require_at_least

    with pytest.raises(DelibError) as err:
        require_at_least(name, value, minimum, why)
    assert str(err.value) == expected
    require_at_least(name, minimum, minimum, why)  # the bound itself passes


def test_experiment_benchmark_not_in_the_file_is_named_before_anything_runs(tmp_path, capsys):
    config = tmp_path / "exp.toml"
    out = tmp_path / "out"
    config.write_text(f'name = "g"\nout = "{out.as_posix()}"\nmethods = ["cot"]\nbenchmarks = ["gsm8k"]\n'
                      '[backend]\nname = "scripted"\n')
    assert main(["experiment", str(config), "--benchmarks", "gsm8k,mmlu", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'mmlu' is not in" in err and "it has: gsm8k" in err
    assert not out.exists()
    assert main(["experiment", str(config), "--methods", "cot,debate", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--methods: 'debate' is not in" in err and "it has: cot" in err
    assert not out.exists()


def test_experiment_prints_each_row_under_its_label_not_its_method(tmp_path, capsys):
    config = tmp_path / "exp.toml"
    config.write_text(f'name = "g"\nout = "{(tmp_path / "out").as_posix()}"\nmethods = ["cot"]\n'
                      'benchmarks = ["gsm8k"]\nlimit = 2\n[backend]\nname = "scripted"\nbenchmark = "gsm8k"\n'
                      '[[variants]]\nlabel = "cot-hot"\nmethod = "cot"\ntemperature = 1.2\n')
    assert main(["experiment", str(config), "--quiet"]) == 0
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines() if "accuracy" in line]
    assert rows == ["cot", "cot-hot"]


def run_ok(out, *args):
    return main(["run", "--backend", "scripted", "--limit", "3", "--out", str(out), "--quiet", *args])


def one_line(capsys):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("delib: error:"), err
    return err


def test_an_empty_benchmark_file_is_an_error_naming_it(tmp_path, capsys, monkeypatch):
    (tmp_path / "data" / "gsm8k").mkdir(parents=True)
    (tmp_path / "data" / "gsm8k" / "test.jsonl").write_text("")
    monkeypatch.setenv("DELIB_DATA_DIR", str(tmp_path / "data"))  # what --data-dir sets, undone after the test
    err = bad(tmp_path, capsys, "--method", "cot")
    assert f"{tmp_path / 'data' / 'gsm8k' / 'test.jsonl'} holds no gsm8k test question" in err
    assert not (tmp_path / "run").exists()


def test_out_that_is_a_file_is_named_by_run_and_report(tmp_path, capsys):
    file = tmp_path / "a-file"
    file.write_text("x")
    assert "--out" in bad(tmp_path, capsys, "--method", "cot", "--out", str(file)) and file.read_text() == "x"
    assert run_ok(tmp_path / "run", "--method", "cot") == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "run"), "--out", str(file)]) == 2
    said = one_line(capsys)
    assert f"--out {file} is a file; name a folder" in said and file.read_text() == "x"
    assert "resume" not in said  # a report is written anew, never resumed


@pytest.mark.parametrize("text", ["", "{\"method\": ", "[1, 2]"])
def test_a_damaged_config_json_beside_episodes_is_named(tmp_path, capsys, text):
    out = tmp_path / "run"
    assert run_ok(out, "--method", "cot") == 0
    (out / "config.json").write_text(text)
    before = (out / "episodes.jsonl").read_bytes()
    assert run_ok(out, "--method", "cot", "--limit", "4") == 2
    err = one_line(capsys)
    assert f"{out / 'config.json'} is damaged" in err and "delete it and rerun" in err
    assert main(["report", str(out), "--out", str(tmp_path / "report")]) == 2
    assert str(out / "config.json") in one_line(capsys) and not (tmp_path / "report").exists()
    (out / "config.json").unlink()  # the fix the message gives
    assert run_ok(out, "--method", "cot", "--limit", "4") == 0
    assert (out / "episodes.jsonl").read_bytes().startswith(before)


@pytest.mark.parametrize("broken", [
    ["--backend", "openai"],  # neither --model nor --base-url: was a TypeError traceback
    ["--backend", "openai", "--model", "m"],
    ["--backend", "llamacpp", "--model", "gpt-17"],  # an unknown model
    ["--backend", "scripted", "--backend-opt", "skils=0.5"],  # a typo'd option
])
def test_a_backend_that_cannot_be_built_writes_nothing_and_blocks_no_corrected_command(tmp_path, capsys, broken):
    out = tmp_path / "run"
    assert main(["run", "--method", "cot", "--limit", "2", "--out", str(out), "--quiet", *broken]) == 2
    one_line(capsys)
    assert not (out / "config.json").exists()
    assert run_ok(out, "--method", "cot") == 0


def test_a_run_that_failed_before_its_first_episode_blocks_no_corrected_command(tmp_path, capsys):
    """A wrong --base-url port fails on the first request, after config.json is written: a directory with no
    episode takes the corrected command's settings."""
    out = tmp_path / "run"
    wrong = ["--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--backend-opt",
             "max_retries=0", "--backend-opt", "timeout_s=2"]
    assert main(["run", "--method", "cot", "--limit", "2", "--out", str(out), "--quiet", *wrong]) == 2
    assert "127.0.0.1:9" in one_line(capsys) and not (out / "episodes.jsonl").exists()
    assert run_ok(out, "--method", "cot") == 0
    assert json.loads((out / "config.json").read_text())["backend"] == "scripted"


def test_a_corrupt_episode_line_is_named_by_number_on_rerun_and_in_report(tmp_path, capsys):
    out = tmp_path / "run"
    assert run_ok(out, "--method", "cot") == 0
    lines = (out / "episodes.jsonl").read_text().splitlines(keepends=True)
    (out / "episodes.jsonl").write_text(lines[0] + '{"example_id": "gsm8k/test/1", "corr\n' + lines[2])
    assert run_ok(out, "--method", "cot") == 2
    err = one_line(capsys)
    assert f"{out / 'episodes.jsonl'} line 2 is not an episode" in err and "delete that line" in err
    assert main(["report", str(out), "--out", str(tmp_path / "report")]) == 2
    assert f"{out / 'episodes.jsonl'} line 2 is not an episode" in one_line(capsys)
    (out / "episodes.jsonl").write_text(lines[0] + lines[2])  # the fix the message gives
    assert run_ok(out, "--method", "cot") == 0
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 3


def test_a_deliberating_method_needs_peers(tmp_path, capsys):
    err = bad(tmp_path, capsys, "--method", "debate", "--agents", "1")
    assert "--agents 1 leaves it no peers" in err and not (tmp_path / "run").exists()
    assert err.endswith("use --agents 2 or more (or --method cot for a single agent)")
    assert run_ok(tmp_path / "sc", "--method", "self-consistency", "--agents", "1") == 0  # no rounds: fine
    assert main(["collect", "--backend", "scripted", "--agents", "1", "--out", str(tmp_path / "c"), "--quiet"]) == 2
    assert capsys.readouterr().err.strip().endswith("use --agents 2 or more")  # collect has no --method


def test_a_team_beyond_the_context_window_is_refused_before_any_model_loads(tmp_path, capsys):
    """llama.cpp would fail only after round 0, when an update prompt exceeds n_ctx. The model named here does
    not exist: the context check comes first, before anything is loaded."""
    out = tmp_path / "run"
    assert main(["run", "--method", "debate", "--agents", "100", "--model", str(tmp_path / "none.gguf"),
                 "--limit", "2", "--out", str(out), "--quiet"]) == 2
    err = one_line(capsys)
    assert "--agents 100" in err and "context window of 8192" in err and "n_ctx=N" in err and not out.exists()


def test_a_workflow_whose_ensemble_cannot_fit_the_context_window_is_refused_before_any_model_loads(tmp_path,
                                                                                                   capsys):
    """AFlow's GSM8K ensemble shows 5 whole solutions: at 1024 tokens each they cannot fit a 4096-token window."""
    out = tmp_path / "run"
    assert main(["run", "--method", "aflow-gsm8k", "--model", str(tmp_path / "none.gguf"), "--backend-opt",
                 "n_ctx=4096", "--max-tokens", "1024", "--limit", "2", "--out", str(out), "--quiet"]) == 2
    err = one_line(capsys)
    assert "about 5120 tokens" in err and "lower --max-tokens, or raise" in err and not out.exists()


def test_an_abbreviated_flag_is_refused_not_read_as_the_flag_it_starts(tmp_path, capsys):
    """argparse would read --lim as --limit (and ``delib tree --sub`` as --subset or --subset-seed): refused."""
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--method", "cot", "--backend", "scripted", "--lim", "3", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and err.startswith("delib: error: unrecognized arguments: --lim 3")
    assert not out.exists()


def test_no_delib_command_accepts_abbreviated_flags():
    """Every subcommand's parser, not only the top one, has abbreviations off."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert not parser.allow_abbrev and {name for name, p in commands.items() if p.allow_abbrev} == set()


@pytest.mark.parametrize("argv, command", [
    (["evaluate", "--trees", "t", "--method", "cot", "--out", "o", "--bogus", "1"], "evaluate"),
    (["run", "--method", "cot", "--out", "o", "stray"], "run"),
    (["--bogus"], None),
])
def test_a_stray_argument_points_to_the_help_of_its_own_command(capsys, argv, command):
    """argparse hands a subcommand's unknown argument up to ``delib``, whose help does not list that command's
    flags: the error names the command's help instead."""
    with pytest.raises(SystemExit) as done:
        main(argv)
    err = capsys.readouterr().err.strip()
    help_of = f"delib {command}" if command else "delib"
    assert done.value.code == 2 and err.startswith("delib: error: ") and err.endswith(f"see `{help_of} --help`")
    assert "unrecognized arguments" in err or command is None


def test_a_name_given_empty_or_where_none_is_taken_is_refused(capsys):
    """An empty --model would read as the preset's model; a name after `delib models list` would be ignored."""
    from deliberation.errors import DelibError
    from deliberation.perf.results import BenchSettings

    with pytest.raises(DelibError, match="^--model is empty; name a catalogue model"):
        BenchSettings.for_mode(True, "")
    assert main(["models", "list", "smollm2-135m"]) == 2
    assert "takes no name ('smollm2-135m'); `delib models pull smollm2-135m` installs one" in capsys.readouterr().err


def test_repeated_finds_the_first_name_given_twice():
    from deliberation.errors import repeated

    assert repeated(["a", "b", "a", "b"]) == "a" and repeated(["a", "b"]) is None
    assert repeated([" x", "x "], str.strip) == "x "
