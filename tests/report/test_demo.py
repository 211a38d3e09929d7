"""experiments/demo.py (`make demo`) on a small scripted tree store built as the 1.5B one is (6 samples, mpdf's
nodes only): every listed method replays offline, the report pairs them with the best fixed rule and with
self-consistency at equal tokens, a rerun resumes, and the printed `delib run` line regenerates the mpdf row."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from deliberation import methods
from deliberation.cli.main import main
from scripts import script

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = 3


@pytest.fixture(scope="module")
def demo():
    with script("experiments/demo.py") as module:
        yield module


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("trees") / "store"
    assert main(["tree", "--backend", "scripted", "--limit", str(QUESTIONS), "--samples", "6", "--methods", "mpdf",
                 "--out", str(out), "--quiet"]) == 0
    return str(out)


def summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def test_replay_and_report_pair_every_method_with_the_best_rule_and_equal_token_self_consistency(demo, store,
                                                                                                 tmp_path):
    demo.replay(tmp_path, store)
    plot = demo.report(tmp_path, store)
    assert sorted(p.name for p in (tmp_path / "replay").iterdir()) == sorted(demo.methods_of(store))
    assert {"mpdf", "oracle", "cisc"} <= set(demo.methods_of(store)) and "debate" not in demo.methods_of(store)
    assert plot.exists() and (tmp_path / "report" / "report.csv").exists()
    text = (tmp_path / "report" / "report.md").read_text()
    best = re.search(r"^## Paired against (\S+)$", text, re.MULTILINE)
    assert best and methods.get(best[1]).fixed_rule
    assert "## Against self-consistency at equal tokens" in text
    assert re.search(r"^\| mpdf \| [a-z0-9]+/[a-z]+, k=\d \| 3 \|", text, re.MULTILINE)


def test_the_whole_demo_reruns_and_its_live_line_regenerates_the_mpdf_row(demo, store, tmp_path, capsys):
    demo.demo(tmp_path, store, ask_backend="scripted")
    first = capsys.readouterr().out
    assert re.search(r"^round 1: agent 0 (persisted|refined|conceded|resampled) ", first, re.MULTILINE)
    before = summary(tmp_path / "replay" / "mpdf")
    demo.demo(tmp_path, store, ask_backend="scripted")  # resumes: nothing to replay, the same report
    assert summary(tmp_path / "replay" / "mpdf")["n"] == before["n"] == QUESTIONS
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line == demo.live_command(tmp_path / "replay" / "mpdf", tmp_path / "live-mpdf")
    words = shlex.split(line)
    assert words[:2] == ["delib", "run"] and "--rounds" in words
    assert main([*words[1:], "--quiet"]) == 0
    live = summary(tmp_path / "live-mpdf")
    assert (live["n"], live["accuracy"], live["tokens_per_question"]) == (
        before["n"], before["accuracy"], before["tokens_per_question"])


def test_the_demo_replays_the_first_store_this_machine_can_load(demo, tmp_path):
    """A store whose questions cannot be loaded here (no data, no store) is passed over, its reason kept."""
    good = tmp_path / "good"
    assert main(["tree", "--backend", "scripted", "--limit", "1", "--out", str(good), "--quiet"]) == 0
    assert demo.usable_store((str(tmp_path / "missing"), str(good))) == str(good)
    with pytest.raises(SystemExit, match="no tree store to replay here: .*missing.* is not a tree store"):
        demo.usable_store((str(tmp_path / "missing"),))
