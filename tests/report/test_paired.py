"""Paired statistics (report/paired.py) against hand-computed cases."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from deliberation.cli.main import main
from deliberation.errors import DelibError
from deliberation.report.paired import compare, holm, mcnemar_exact, paired_bootstrap


def test_holm_multiplies_the_ith_smallest_p_by_m_minus_i_plus_1_monotone_and_capped():
    # sorted 0.005, 0.01, 0.03, 0.04 -> 0.02, 0.03, 0.06, max(0.04, 0.06); returned in the order given
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == [1.0, 1.0] and holm([0.2]) == [0.2] and holm([]) == []


def test_mcnemar_exact_matches_hand_computed_binomial_tails():
    assert mcnemar_exact(1, 6) == pytest.approx(2 * (1 + 7) / 2**7)  # 0.125
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)  # 0.0625
    assert mcnemar_exact(3, 3) == 1.0 and mcnemar_exact(0, 0) == 1.0


def test_mcnemar_exact_holds_for_more_discordant_questions_than_a_float_power_of_two_reaches():
    """2.0 ** 1024 overflows: a report over thousands of questions still gets its p."""
    from scipy.stats import binomtest

    for b, c in ((600, 500), (1100, 1000), (3000, 2990)):
        assert mcnemar_exact(b, c) == pytest.approx(binomtest(b, b + c, 0.5).pvalue, rel=1e-9)


def test_a_hand_built_pairing():
    """Ten questions: 5 both right, row alone right on 3 (q5-q7), reference alone on 1 (q8), both wrong on 1.
    Difference (8 - 6) / 10 = +0.2; McNemar on b = 3, c = 1: 2 * (1 + 4) / 16 = 0.625; tokens 200 vs 100."""
    row = {("g", 0, f"q{i}"): (i < 8 and i != 8, 200) for i in range(10)}
    ref = {("g", 0, f"q{i}"): (i < 5 or i == 8, 100) for i in range(10)}
    row[("g", 0, "q8")] = (False, 200)
    p = compare("row", "ref", "g", row, ref)
    assert (p.n, p.both_right, p.only_row, p.only_reference, p.both_wrong) == (10, 5, 3, 1, 1)
    assert p.accuracy_diff == pytest.approx(0.2) and p.mcnemar_p == pytest.approx(0.625)
    assert p.accuracy_diff_ci95[0] <= 0.2 <= p.accuracy_diff_ci95[1] and p.token_ratio == pytest.approx(2.0)
    assert p.token_ratio_ci95 == pytest.approx((2.0, 2.0))


def test_bootstrap_interval_brackets_a_known_difference_and_shrinks_with_n():
    rng = np.random.default_rng(1)
    wide, narrow = [], []
    for n, out in ((40, wide), (4000, narrow)):
        ref = (rng.random(n) < 0.5).astype(float)
        row = np.where(rng.random(n) < 0.8, ref, 1.0)  # row = ref, fixed to right on ~20% of questions
        (lo, hi), _ = paired_bootstrap(row, ref, np.ones(n), np.ones(n))
        assert lo <= row.mean() - ref.mean() <= hi
        out.append(hi - lo)
    assert narrow[0] < wide[0] / 5


def test_rows_with_no_common_question_are_refused():
    with pytest.raises(DelibError, match="no common question"):
        compare("a", "b", "g", {("g", 0, "q1"): (True, 1)}, {("g", 0, "q2"): (True, 1)})


def test_delib_report_pairs_rows_with_the_best_fixed_rule_by_default(tmp_path):
    for method in ("agreement-threshold", "always-persist", "debate"):
        assert main(["run", "--method", method, "--backend", "scripted", "--limit", "8", "--quiet",
                     "--out", str(tmp_path / "runs" / method)]) == 0
    assert main(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "rep")]) == 0
    paired = json.loads((tmp_path / "rep" / "paired.json").read_text())
    accuracy = {m: json.loads((tmp_path / "runs" / m / "summary.json").read_text())["accuracy"]
                for m in ("agreement-threshold", "always-persist")}
    best = max(sorted(accuracy), key=accuracy.__getitem__)
    assert {p["reference"] for p in paired} == {best} and all(p["n"] == 8 for p in paired)
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "## Paired against" in text
    if importlib.util.find_spec("matplotlib") is not None:  # the plot extra (make test installs it)
        assert f"![paired difference to {best}](paired.png)" in text
        assert (tmp_path / "rep" / "paired.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert text.count("pip install -e '.[plot]'") == 1
        assert not (tmp_path / "rep" / "paired.png").exists()
    assert main(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "rep2"), "--reference", "nope"]) == 2


def test_the_paired_figure_draws_plain_self_consistency_as_one_curve_in_k_order():
    from deliberation.report.compare_plot import sampling_curve
    from deliberation.report.paired import Paired

    def row(label: str) -> Paired:
        return Paired(label, "rule", "pooled", 4, 2, 1, 1, 0, 1.0, 0.0, (-0.5, 0.5), 1.0, (0.9, 1.1))

    rows = [row(label) for label in ("self-consistency [agents=6]", "mpdf [x]", "self-consistency [agents=1]",
                                     "self-consistency [agents=3, temperature=0.3]", "self-consistency [agents=3]")]
    curve, others = sampling_curve(rows)
    assert [k for k, _ in curve] == [1, 3, 6] and [p.label for _, p in curve][0] == "self-consistency [agents=1]"
    assert [p.label for p in others] == ["mpdf [x]", "self-consistency [agents=3, temperature=0.3]"]
    assert sampling_curve(rows[:2]) == ([], rows[:2])  # one sample count: no curve, a row of its own


def test_without_matplotlib_the_paired_figure_is_skipped_with_one_hint(tmp_path, monkeypatch):
    for method in ("agreement-threshold", "always-persist"):
        assert main(["run", "--method", method, "--backend", "scripted", "--limit", "4", "--quiet",
                     "--out", str(tmp_path / "runs" / method)]) == 0
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    assert main(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "rep")]) == 0
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "## Paired against" in text and text.count("pip install -e '.[plot]'") == 1
    assert not list((tmp_path / "rep").glob("*.png"))


def test_budget_k_is_the_largest_sample_count_within_the_rows_tokens():
    from deliberation.report.equal_tokens import budget_k

    q = ("g", 0, "q")
    runs = {k: {q: (True, 100 * k)} for k in (1, 2, 3)}
    assert [budget_k(t, runs, {q}) for t in (50, 100, 250, 1000)] == [None, 1, 2, 3]  # 50: cheaper than any k
    assert [budget_k(t, runs, {q}, above=True) for t in (50, 100, 250, 1000)] == [1, 1, 3, None]  # 1000: dearer


def test_a_row_pairs_with_self_consistency_on_both_sides_of_its_tokens_per_benchmark_and_pooled():
    """Tokens 250 on one benchmark, 150 on the other: k = 2/1 below, k = 3/2 above, each side its own reference."""
    from deliberation.report.equal_tokens import EQUAL_TOKENS, NEXT_K_UP, at_equal_tokens

    qs = {c: [(c, 0, f"q{i}") for i in range(4)] for c in ("a", "b")}
    runs = {c: {k: {q: (i % 2 == 0, 100 * k) for i, q in enumerate(qs[c])} for k in (1, 2, 3)} for c in qs}
    row = {**{q: (True, 250) for q in qs["a"]}, **{q: (False, 150) for q in qs["b"]}}
    below, above = at_equal_tokens("m", row, runs), at_equal_tokens("m", row, runs, above=True)
    assert [(p.column, p.budget, p.reference) for p in below] == [("a", (2,), EQUAL_TOKENS), ("b", (1,), EQUAL_TOKENS),
                                                                   ("pooled", (2, 1), EQUAL_TOKENS)]
    assert [(p.column, p.budget, p.reference) for p in above] == [("a", (3,), NEXT_K_UP), ("b", (2,), NEXT_K_UP),
                                                                   ("pooled", (3, 2), NEXT_K_UP)]
    assert above[-1].n == 8 and above[-1].token_ratio == (4 * 250 + 4 * 150) / (4 * 300 + 4 * 200)


def test_delib_report_with_trees_pairs_rows_with_self_consistency_at_their_budget(tmp_path, capsys):
    store, runs = str(tmp_path / "store"), str(tmp_path / "runs")
    assert main(["tree", "--backend", "scripted", "--limit", "10", "--samples", "6", "--quiet", "--out", store]) == 0
    assert main(["evaluate", "--trees", store, "--method", "debate,cot", "--quiet", "--out", runs]) == 0
    assert main(["report", runs, "--trees", store, "--out", str(tmp_path / "rep")]) == 0
    paired = {p["label"]: p for p in json.loads((tmp_path / "rep" / "paired.json").read_text())
              if p.get("budget")}
    assert paired["cot"]["budget"] == [1] and paired["cot"]["only_row"] == 0  # cot = sample 0
    assert paired["debate"]["budget"] == [6] and paired["debate"]["n"] == 10  # debate > 6 samples
    assert "## Against self-consistency at equal tokens" in (tmp_path / "rep" / "report.md").read_text()
    other = str(tmp_path / "other")  # a store of other questions: refused, and its replays leave no folder
    assert main(["tree", "--backend", "scripted", "--offset", "20", "--limit", "3", "--samples", "3", "--quiet",
                 "--out", other]) == 0
    capsys.readouterr()
    assert main(["report", runs, "--trees", other, "--out", str(tmp_path / "refused")]) == 2
    assert "no row of this report ran the questions of" in capsys.readouterr().err
    assert not (tmp_path / "refused").exists()


def test_equal_tokens_come_from_the_self_consistency_runs_given_once_two_sample_counts_are(tmp_path):
    """What the paired looks do: no --trees, self-consistency replayed at several k among the inputs."""
    store, runs = str(tmp_path / "store"), tmp_path / "runs"
    assert main(["tree", "--backend", "scripted", "--limit", "6", "--samples", "6", "--quiet", "--out", store]) == 0
    assert main(["evaluate", "--trees", store, "--method", "debate,cot", "--quiet", "--out", str(runs / "m")]) == 0

    def sc(k: int) -> None:
        assert main(["evaluate", "--trees", store, "--method", "self-consistency", "--agents", str(k), "--quiet",
                     "--out", str(runs / f"sc-{k}")]) == 0

    def equal_tokens(name: str) -> dict[str, dict]:
        assert main(["report", str(runs), "--out", str(tmp_path / name)]) == 0
        written = tmp_path / name / "paired.json"  # absent when nothing is paired (no fixed rule is a row)
        paired = json.loads(written.read_text()) if written.is_file() else []
        return {p["label"]: p for p in paired if p.get("budget")}

    sc(3)
    assert equal_tokens("one-k") == {}  # one sample count: no budget to choose
    sc(6)
    paired = equal_tokens("two-k")
    assert "cot" not in paired  # one sample is cheaper than the fewest samples present (3): nothing to compare
    assert "Not met by self-consistency at their budget (cheaper there than its fewest samples present, run at " \
        "other settings or on other questions, or with fewer than two sample counts run there): cot on " \
        "gsm8k/test.\n" in \
        (tmp_path / "two-k" / "report.md").read_text()
    assert paired["debate"]["budget"] == [6] and paired["debate"]["n"] == 6
    assert paired["debate"]["column"] == "gsm8k/test"
    assert paired["debate"]["reference"] == "self-consistency at equal tokens"
    sc(1)
    assert equal_tokens("three-k")["cot"]["budget"] == [1]
    assert "Not met by" not in (tmp_path / "three-k" / "report.md").read_text()


def test_equal_tokens_pair_a_row_only_with_self_consistency_of_its_own_model(tmp_path):
    """Runs of another model on the same questions (same ids, same seed) are never its comparison."""
    store, runs = str(tmp_path / "store"), tmp_path / "runs"
    assert main(["tree", "--backend", "scripted", "--limit", "4", "--samples", "6", "--quiet", "--out", store]) == 0
    assert main(["evaluate", "--trees", store, "--method", "debate", "--quiet", "--out", str(runs / "debate")]) == 0
    for k in (1, 6):
        assert main(["evaluate", "--trees", store, "--method", "self-consistency", "--agents", str(k), "--quiet",
                     "--out", str(runs / f"sc-{k}")]) == 0

    def budgets(name: str) -> list:
        assert main(["report", str(runs), "--out", str(tmp_path / name)]) == 0
        written = tmp_path / name / "paired.json"
        return [p["budget"] for p in (json.loads(written.read_text()) if written.is_file() else []) if p.get("budget")]

    assert budgets("same") == [[6]]  # debate against its own model's six samples
    for k in (1, 6):  # the same samples, recorded as another model's
        config = json.loads((runs / f"sc-{k}" / "config.json").read_text())
        (runs / f"sc-{k}" / "config.json").write_text(json.dumps({**config, "backend_options": {"model": "other"}}))
    assert budgets("other") == []
