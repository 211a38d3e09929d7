"""Zero-cost correctness signals and their AUROC table (engine/signals.py, trees/responses.py,
report/signals.py): the AUROC is the Mann-Whitney statistic, the signals read what they should, and a
store's responses come back with their verdicts."""

from __future__ import annotations

import pytest

from deliberation.cli.main import main
from deliberation.engine.signals import SIGNALS
from deliberation.engine.state import AgentView
from deliberation.report.signals import auroc, markdown, signal_rows
from deliberation.trees.responses import SIGNAL_NAMES, Response, responses
from deliberation.trees.store import TreeStore
from deliberation.types import LogprobSummary


def test_auroc_is_the_share_of_right_wrong_pairs_ranked_right():
    assert auroc([0.9, 0.8, 0.1, 0.2], [True, True, False, False]) == 1.0
    assert auroc([0.1, 0.2, 0.9, 0.8], [True, True, False, False]) == 0.0
    assert auroc([0.5, 0.5, 0.5], [True, False, False]) == 0.5  # ties count one half
    assert auroc([0.9, 0.3, 0.5, 0.1], [True, True, False, False]) == 0.75  # 3 of 4 pairs
    assert auroc([0.1, 0.2], [True, True]) is None


def view(key, text="", confidence=None, summary=None):
    return AgentView(key, text, confidence, 10, False, False, summary)


def test_signals_read_the_team_and_the_text():
    summary = LogprobSummary(-0.3, -1.2, (-0.1, -0.7, -0.5), (0, 13, 15, 16))  # "...So", " 7", "."
    team = [view("7", "3 + 4 = 7. So 7.", 0.9, summary), view("7", "3 + 4 = 8, so 7."), view("9")]
    values = {name: [SIGNALS[name](team, i) for i in range(3)] for name in SIGNALS}
    assert values["critic"] == [0.9, None, None]
    assert values["agreement"] == pytest.approx([2 / 3, 2 / 3, 1 / 3])
    assert values["logprob-mean"] == [-0.3, None, None]
    assert values["logprob-lowest-window"] == [-1.2, None, None]
    assert values["logprob-answer"][0] == pytest.approx(-0.7)  # the last "7": the tail's second token
    assert values["arith-ok"] == [1.0, 0.0, None] and values["arith-clean"] == [1.0, 0.0, 1.0]
    assert values["answer-follows"] == [1.0, 0.0, None]


def test_a_store_gives_every_response_with_its_verdict_and_signals(tmp_path):
    out = tmp_path / "store"
    assert main(["tree", "--backend", "scripted", "--limit", "4", "--methods", "mpdf", "--out", str(out),
                 "--quiet"]) == 0
    rows = responses(TreeStore.open(out))
    assert len(rows) == 4 * 2 * 3  # questions x (round 0, REFINE) x agents
    assert {r.round for r in rows} == {0, 1} and all(len(r.signals) == len(SIGNAL_NAMES) for r in rows)
    critic = SIGNAL_NAMES.index("critic")
    assert all(r.signals[critic] is not None for r in rows)  # the store holds every critic call
    table = signal_rows(rows)
    assert [t.signal for t in table] == list(SIGNAL_NAMES)
    assert table[critic].n == len(rows) and table[critic].right == sum(r.correct for r in rows)
    assert "| critic | 24 |" in markdown("scripted", table)


def test_the_interval_resamples_questions():
    rows = [Response(f"q{q}", 0, a, a == 0, (float(a == 0),) + (None,) * (len(SIGNAL_NAMES) - 1))
            for q in range(5) for a in range(3)]
    first = signal_rows(rows)[0]
    assert first.auroc == 1.0 and first.ci95 == (1.0, 1.0) and first.n == 15
