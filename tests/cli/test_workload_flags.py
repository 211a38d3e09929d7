"""One reading of the shared flags into a workload (cli/common.workload): every Workload field, for every
command that runs questions, and what a command decides itself wins over its flag."""

from __future__ import annotations

import dataclasses

import pytest

from deliberation.cli.common import workload
from deliberation.cli.main import build_parser
from deliberation.config import EngineConfig, Selection, Workload


def parsed(*argv: str):
    args = build_parser().parse_args(list(argv))
    args.argv = list(argv)
    return args


@pytest.mark.parametrize("command", ["run --method cot", "tree", "aflow-search", "optimize-graph --method gptswarm"])
def test_every_workload_field_comes_from_the_flags(command, tmp_path):
    args = parsed(*command.split(), "--benchmark", "math", "--split", "train", "--limit", "4", "--backend",
                  "scripted", "--backend-opt", "p_break=0.2", "--seed", "5", "--concurrency", "2", "--offset", "1",
                  "--out", str(tmp_path / "out"))
    fields = workload(args)
    assert set(fields) == {f.name for f in dataclasses.fields(Workload)}
    assert (fields["benchmark"], fields["split"], fields["limit"]) == ("math", "train", 4)
    assert fields["backend"] == "scripted"
    assert fields["backend_options"] == {"p_break": 0.2} and fields["concurrency"] == 2
    assert fields["engine"].seed == 5 and fields["selection"] == Selection(offset=1)
    assert fields["command"].startswith("delib " + command.split()[0])


def test_what_a_command_decides_wins_over_its_flag(tmp_path):
    args = parsed("run", "--method", "cot", "--backend", "scripted", "--cache", "a.sqlite", "--out", str(tmp_path))
    fields = workload(args, cache="b.sqlite", engine=EngineConfig(agents=1))
    assert fields["cache"] == "b.sqlite" and fields["engine"] == EngineConfig(agents=1)


@pytest.mark.parametrize("command, unread", [("aflow-search", "--agents"), ("aflow-search", "--rounds"),
                                             ("optimize-graph --method gptswarm", "--prompts"),
                                             ("optimize-graph --method gptswarm", "--no-early-stop")])
def test_an_optimisation_offers_no_engine_flag_it_would_ignore(command, unread, tmp_path, capsys):
    with pytest.raises(SystemExit):
        parsed(*command.split(), unread, *(["continuation"] if unread == "--prompts" else []), "--out", str(tmp_path))
    assert f"unrecognized arguments: {unread}" in capsys.readouterr().err
