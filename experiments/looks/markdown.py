"""A look's record as markdown: the headline table the README's headline becomes (headline.md), the
registered headroom table (headroom.md), and the table of every look taken (looks.md). The record is
``looks/record.py``'s: the comparisons and the decision are computed there, and only shown here.
"""

from __future__ import annotations

from typing import Any, Sequence

from deliberation.actions import EXTENDED_ACTIONS, by_cost
from deliberation.methods.oracle import SEARCHED
from deliberation.report.compare import ORACLE, SFT_PREFIX
from deliberation.report.loading import sampling_k, sampling_label
from deliberation.report.paired import POOLED, diff_points
from deliberation.runs.tune_rules import constants

from looks.actions import actions_markdown
from looks.record import rule_method
from looks.sequential import FUTILITY_POINTS

ORACLE_ROW = f"oracle ({', '.join(a.value for a in by_cost(SEARCHED))}; in hindsight)"
"""The headroom table's oracle row, named by the actions it searches (``methods/oracle.SEARCHED``)."""


HEADLINE_HEAD = ("| arm | n | accuracy % | vs best rule, points [95% CI] | McNemar p (Holm) | "
                 "vs self-consistency at equal tokens, points [95% CI] (k) | tokens / question |\n"
                 "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")


def headline_markdown(record: dict[str, Any]) -> str:
    """The look's headline for the README: every arm per benchmark and pooled (pooled first) with n,
    accuracy, the paired difference to the best rule and to self-consistency at equal tokens, each with its
    95% interval, McNemar p and tokens a question; then the registered decision. Arms in the order: the
    learned policy, then by pooled accuracy. The best rule's own method, replayed again under its plain name
    (the record keeps it), is left out: its row would repeat the reference's."""
    methods, equal = record["methods"], record.get("equal_tokens", {})
    columns = [POOLED] + sorted({c for cells in methods.values() for c in cells} - {POOLED})
    accuracy = {label: _share(cells.get(POOLED, {})) for label, cells in methods.items()}
    itself = rule_method(record["reference"])
    order = sorted((label for label in methods if label != itself),
                   key=lambda label: (label != record["learned"], -accuracy[label], label))
    parts = []
    for column in columns:
        lines = [_headline_line(label, methods[label][column], equal.get(label, {}).get(column))
                 for label in order if column in methods[label]]
        parts.append(f"**{column}** (reference: {record['reference']})\n\n{HEADLINE_HEAD}" + "\n".join(lines))
    for reference, by_column in sorted(record.get("learned_against", {}).items()):
        column, cell = (POOLED, by_column[POOLED]) if POOLED in by_column else next(iter(by_column.items()))
        holm_p = cell.get("mcnemar_p_holm", cell["mcnemar_p"])
        parts.append(f"{record['learned']} against {reference} ({column}, n = {cell['n']}): "
                     f"{diff_points(cell['diff'], cell['diff_ci95'])} points, McNemar p {cell['mcnemar_p']:.3g} "
                     f"(Holm {holm_p:.3g}), token ratio {cell['token_ratio']:.2f}.")
    d = record["decision"]
    parts.append(f"Look {record['look']}: McNemar z = {d['z']:+.2f} against the boundary {d['boundary']}; "
                 f"{_futility_ends(record)}; "
                 f"decision: {d['reason']} (stop: {'yes' if d['stop'] else 'no'}). As registered, efficacy is "
                 "decided on z against the O'Brien-Fleming boundary; the exact McNemar p above is reported "
                 "beside it and may differ near the boundary, and the 95% intervals are not adjusted for the "
                 "looks.")
    return "\n\n".join(parts) + "\n"


def _futility_ends(record: dict[str, Any]) -> str:
    """The two upper ends the registered futility rule reads, as the headline's decision line gives them."""
    ends = [f"{label} {_end(end)}" for label, end in upper_ends(record)]
    return (f"futility reads the upper ends of the 95% intervals against the best rule, {' and '.join(ends)} "
            f"points (it stops below +{100 * FUTILITY_POINTS:.0f})")


def upper_ends(record: dict[str, Any]) -> list[tuple[str, float]]:
    """(``oracle`` | ``learned``, the upper end in points of its pooled 95% interval against the best rule):
    what the registered futility rule reads (``looks/sequential.decide``)."""
    return [(label, 100 * record["methods"][arm][POOLED]["diff_ci95"][1])
            for label, arm in (("oracle", ORACLE), ("learned", record["learned"]))]


def _end(points: float) -> str:
    """A futility end to two decimals, so an end just below +2 points never reads as +2.0."""
    return f"{points:+.2f}"


LOOKS_HEAD = ("| look | commit | n ({columns}) | learned - best rule, points [95% CI] | McNemar z (boundary) | "
              "futility: upper ends, oracle / learned (stop below +{stop:.0f}) | decision |\n"
              "| --- | --- | ---: | ---: | ---: | ---: | --- |\n")


def looks_markdown(looks: Sequence[dict[str, Any]]) -> str:
    """Every look taken, one row each from its record (summary.json's ``looks``): the commit it was computed
    under, n per benchmark ("-" where a look has no question of one), the primary difference with its
    interval, the McNemar z against the look's boundary, the two futility ends and the decision. Written
    beside summary.json as looks.md, so no one copies these numbers by hand. A record without these fields
    raises KeyError."""
    columns = sorted({c for x in looks for c in x["methods"][x["learned"]]} - {POOLED})
    lines = [_look_line(x, columns) for x in sorted(looks, key=lambda x: x["look"])]
    return LOOKS_HEAD.format(columns=" + ".join(columns), stop=100 * FUTILITY_POINTS) + "\n".join(lines) + "\n"


def _look_line(record: dict[str, Any], columns: Sequence[str]) -> str:
    cells, d = record["methods"][record["learned"]], record["decision"]
    commit = record.get("provenance", {}).get("commit") or "-"
    commit = commit[:7] + ("+dirty" if commit.endswith("+dirty") else "")
    n = " + ".join(str(cells[c]["n"]) if c in cells else "-" for c in columns)
    ends = " / ".join(_end(end) for _, end in upper_ends(record))
    primary = diff_points(cells[POOLED]["diff"], cells[POOLED]["diff_ci95"])
    return (f"| {record['look']} | {commit} | {n} | {primary} | {d['z']:+.2f} ({d['boundary']}) | {ends} | "
            f"{d['reason']} |")


def _share(cell: dict[str, Any]) -> float:
    return cell.get("correct", 0) / max(cell.get("n", 0), 1)


def _headline_line(label: str, cell: dict[str, Any], equal: dict[str, Any] | None) -> str:
    """One arm's row: the best rule's own row shows no difference to itself."""
    against = "reference"
    if "diff_ci95" in cell:
        holm_p = f" ({cell['mcnemar_p_holm']:.3g})" if "mcnemar_p_holm" in cell else ""
        against = f"{diff_points(cell['diff'], cell['diff_ci95'])} | {cell['mcnemar_p']:.3g}{holm_p}"
    else:
        against += " | "
    sampled = ("" if equal is None else
               f"{diff_points(equal['diff'], equal['diff_ci95'])} (k={'/'.join(map(str, equal['k']))})")
    if equal is not None and "mcnemar_p_holm" in equal:  # a registered test (the learned arm's): its p beside it
        sampled += f", p {equal['mcnemar_p']:.3g} (Holm {equal['mcnemar_p_holm']:.3g})"
    return (f"| {label} | {cell['n']} | {100 * _share(cell):.1f} | {against} | {sampled} | "
            f"{cell['tokens_per_question']:.0f} |")


HEADROOM_HEAD = ("| row | n | accuracy % | tokens / question | vs best rule, points [95% CI] |\n"
                 "| --- | ---: | ---: | ---: | ---: |\n")


def headroom_markdown(record: dict[str, Any]) -> str:
    """The registered headroom table (PREREGISTRATION amendment 1) per benchmark and pooled (pooled first):
    the round-0 vote (self-consistency at k = 3), some agent right at round 0, the oracle, the best rule, each
    constant rule, the learned and SFT policies, self-consistency at k = 1..6, with accuracy, tokens a
    question and the paired difference to the best rule; then each signal's AUROC for answer correctness
    over every round-0 answer and every agent's REFINE of the look's questions (``trees/responses.py``); then
    the meta-actions each arm took, when the record holds them."""
    methods, room = record["methods"], record.get("headroom", {})
    columns = [POOLED] + sorted({c for cells in methods.values() for c in cells} - {POOLED})
    parts = []
    for column in columns:
        right = room.get(column, {}).get("some_agent_right")
        lines = []
        for name, label in _room_rows(record):
            if label is None and right is not None:  # from the stores, not an arm
                lines.append(f"| {name} | {right['n']} | {100 * right['share']:.1f} | | |")
            elif label is not None and column in methods.get(label, {}):
                lines.append(_room_line(name, methods[label][column]))
        parts.append(f"**{column}** (reference: {record['reference']})\n\n{HEADROOM_HEAD}" + "\n".join(lines))
        aurocs = room.get(column, {}).get("auroc", {})
        if aurocs:
            parts.append(f"AUROC for answer correctness, {column} (round-0 answers and REFINEs; 95% interval "
                         "resampling questions)\n\n| signal | n | AUROC [95% CI] |\n| --- | ---: | ---: |\n" +
                         "\n".join(_auroc_line(name, cell) for name, cell in aurocs.items()))
    if record.get("actions"):
        parts.append(actions_markdown(record["actions"], record["learned"]))
    return "\n\n".join(parts) + "\n"


def _room_rows(record: dict[str, Any]) -> list[tuple[str, str | None]]:
    """(row name, the arm's label) in the registered order; None: some agent right at round 0 (from the
    stores, not an arm)."""
    labels = record["methods"]
    sft = [label for label in labels if label.startswith(SFT_PREFIX)]
    sampled = {label: k for label in labels if (k := sampling_k(label)) is not None}
    vote = next((label for label, k in sampled.items() if k == 3), sampling_label(3))
    rows: list[tuple[str, str | None]] = [("round-0 vote (self-consistency, k = 3)", vote),
                                          ("some agent right at round 0", None), (ORACLE_ROW, ORACLE),
                                          (record["reference"], record["reference"])]
    itself = rule_method(record["reference"])  # the best rule's method is its row already
    rows += [(c, c) for c in constants(EXTENDED_ACTIONS) if c in labels and c != itself]
    rows += [(record["learned"], record["learned"]), *((s, s) for s in sft)]
    return rows + [(label, label) for label in sorted(sampled, key=sampled.__getitem__)]


def _room_line(name: str, cell: dict[str, Any]) -> str:
    against = diff_points(cell["diff"], cell["diff_ci95"]) if "diff_ci95" in cell else "reference"
    return (f"| {name} | {cell['n']} | {100 * _share(cell):.1f} | {cell['tokens_per_question']:.0f} | "
            f"{against} |")


def _auroc_line(name: str, cell: dict[str, Any]) -> str:
    if cell.get("auroc") is None:
        return f"| {name} | {cell['n']} | - |"
    ci = "" if cell.get("ci95") is None else " [{:.3f}, {:.3f}]".format(*cell["ci95"])
    return f"| {name} | {cell['n']} | {cell['auroc']:.3f}{ci} |"
