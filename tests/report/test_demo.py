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
from deliberation.report.paired import EQUAL_TOKENS, POOLED, Paired
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
                                                                                                 tmp_path, capsys):
    demo.replay(tmp_path, store)
    figures = demo.report(tmp_path, store)
    assert sorted(p.name for p in (tmp_path / "replay").iterdir()) == sorted(demo.methods_of(store))
    assert {"mpdf", "oracle", "cisc"} <= set(demo.methods_of(store)) and "debate" not in demo.methods_of(store)
    assert [p.name for p in figures] == ["accuracy_vs_tokens.png", "paired.png"]
    assert all(p.exists() for p in figures)
    text = (tmp_path / "report" / "report.md").read_text()
    assert "## Paired against agreement-resample\n" in text  # the rule tuned on training trees, not the best here
    assert "## Against self-consistency at equal tokens" in text
    assert re.search(rf"^\| {re.escape(LEARNED)} \| [a-z0-9]+/[a-z]+, k=\d \| 3 \|", text, re.MULTILINE)
    out = capsys.readouterr().out
    assert "questions the policy (qwen2.5-coder-1.5b-trees) never saw" in out
    table = out[out.index("method  "):].splitlines()
    rule = next(line for line in table if line.startswith("agreement-resample "))
    assert table[1].startswith(f"{LEARNED}  ") and re.search(r" reference +[+-]\d+\.\d \[", rule), table


def test_the_whole_demo_reruns_and_its_live_line_regenerates_the_mpdf_row(demo, store, tmp_path, capsys):
    demo.demo(tmp_path, store, ask_backend="scripted")
    first = capsys.readouterr().out
    assert re.search(r"^round 1: agent 0 (persisted|refined|conceded|resampled) ", first, re.MULTILINE)
    replayed = re.findall(r"^(\S+)( +)\S+/\S+: accuracy", first, re.MULTILINE)  # `delib evaluate`'s lines
    assert {name for name, _ in replayed} == set(demo.methods_of(store))
    assert len({len(name + gap) for name, gap in replayed}) == 1 and min(len(gap) for _, gap in replayed) >= 2
    before = summary(tmp_path / "replay" / "mpdf")
    demo.demo(tmp_path, store, ask_backend="scripted")  # resumes: nothing to replay, the same report
    assert summary(tmp_path / "replay" / "mpdf")["n"] == before["n"] == QUESTIONS
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line == demo.live_command(tmp_path / "replay" / "mpdf", tmp_path / "live-mpdf")
    words = shlex.split(line)
    assert words[:2] == ["delib", "run"] and "--rounds" in words
    assert words[words.index("--policy") + 1] == demo.POLICY
    assert main([*words[1:], "--quiet"]) == 0
    live = summary(tmp_path / "live-mpdf")
    assert (live["n"], live["accuracy"], live["tokens_per_question"]) == (
        before["n"], before["accuracy"], before["tokens_per_question"])


def test_the_demo_refuses_a_store_whose_questions_do_not_load_here(demo, tmp_path):
    good = tmp_path / "good"
    assert main(["tree", "--backend", "scripted", "--limit", "1", "--out", str(good), "--quiet"]) == 0
    assert demo.loadable(str(good)) == str(good)
    with pytest.raises(SystemExit, match="no tree store to replay here: .*missing.* not found"):
        demo.loadable(str(tmp_path / "missing"))


@pytest.mark.needs_split("gsm8k/train")
def test_the_demo_refuses_a_store_of_questions_the_policy_trained_on(demo, tmp_path):
    """A store of a GSM8K train question the rule was tuned on (and the policy trained on: its split.json) is no
    held-out store."""
    seen = tmp_path / "seen"
    assert main(["tree", "--backend", "scripted", "--benchmark", "gsm8k", "--split", "train", "--ids",
                 "gsm8k/train/3", "--out", str(seen), "--quiet"]) == 0
    with pytest.raises(SystemExit, match="demo: question gsm8k/train/3 of .* is not held out: the rule was tuned on "):
        demo.held_out(str(seen))


# --- the paired table, on scripted rows -----------------------------------------------------------------

LEARNED = "mpdf [qwen2.5-coder-1.5b-trees]"
RULE = "agreement-resample"


def against(label: str, diff: float, reference: str = RULE, budget: tuple[int, ...] | None = None) -> Paired:
    return Paired(label, reference, "gsm8k/test", 300, 150, 20, 11, 119, 0.0123, diff, (diff - 0.04, diff + 0.03),
                  1.5, (1.4, 1.6), budget=budget)


def cells(correct: int, tokens: float) -> dict:
    cell = {"n": 300, "correct": correct, "tokens_per_question": tokens}
    return {"gsm8k/test": cell, POOLED: cell}


def test_the_paired_table_puts_the_policy_first_and_fits_every_name_in_its_column(demo):
    longest = max(methods.METHODS, key=len)
    paired = [against(LEARNED, -0.03), against(longest, 0.01), against("always-concede", -0.233),
              against("self-consistency", -0.033),
              against(LEARNED, -0.06, EQUAL_TOKENS, (6,)), against(longest, 0.02, EQUAL_TOKENS, (4,))]
    counts = {RULE: cells(210, 1661), LEARNED: cells(201, 3219), longest: cells(213, 2500.4),
              "always-concede": cells(140, 1281), "self-consistency": cells(200, 1281)}
    lines = demo.paired_table(paired, counts, LEARNED).splitlines()
    assert [line.split("  ")[0] for line in lines] == ["method", LEARNED, longest, RULE, "self-consistency",
                                                        "always-concede"]
    assert lines[1].split() == [*LEARNED.split(), "300", "67.0", "-3.0", "[-7.0,", "+0.0]", "0.0123", "-6.0",
                                "[-10.0,", "-3.0]", "k=6", "3219"]
    assert lines[3].split() == [RULE, "300", "70.0", "reference", "-", "1661"]
    assert lines[4].split()[-2:] == ["-", "1281"]  # no self-consistency row against itself
    ends = {len(line) for line in lines}  # numbers right-aligned: every line ends at the tokens column's end
    assert len(ends) == 1
    starts = {line.index(" 300 ") for line in lines[1:]}  # the n column starts after the longest name
    assert starts == {len(LEARNED) + 1} and lines[2][len(longest):len(longest) + 2] == "  "
