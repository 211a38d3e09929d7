"""One look of the paired experiment: its decision and the record docs/results/paired/summary.json keeps.

A look's replays (``experiments/paired_look.sh``) end in a ``delib report`` whose paired.json pairs every
row with the best fixed rule, per benchmark and pooled, and whose report.csv holds each row's counts and
tokens. This module reads both, applies the registered stopping rule (``looks/sequential.py``) to the
pooled rows of the learned policy and of the oracle, and returns the look's record: per benchmark and
pooled, per method, n, correct, tokens_per_question and, against the best rule, only_method,
only_reference, mcnemar_p, diff and diff_ci95, token_ratio and its interval, with the decision and the
boundary it met; each method against self-consistency at its own token budget, per benchmark and pooled,
where the look replayed self-consistency at several k (``report/equal_tokens.py``); the learned policy
against self-consistency at k = 3 and 6 (reports of the same runs with those references); Holm-adjusted
p-values beside the raw ones of every secondary comparison; and the headroom table's columns that come
from the stores (some agent right at round 0, each signal's AUROC); and the meta-actions each arm took
(``looks/actions.py``).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Sequence

from deliberation.errors import DelibError, parse_json, utf8
from deliberation.report.compare import BEST, ORACLE
from deliberation.report.loading import sampling_label
from deliberation.report.paired import POOLED, Paired, holm
from deliberation.report.signals import signal_rows
from deliberation.trees.responses import Response, responses
from deliberation.trees.store import TreeStore
from deliberation.types import from_json, to_json

from looks.sequential import decide


LEARNED_AGAINST_K = (3, 6)
"""The learned policy is also paired with self-consistency at these k (registered secondaries; the look's
``against/self-consistency-k`` reports, experiments/paired_look.sh reads the k from here)."""
HEADROOM_METHODS = (ORACLE, "self-consistency")
"""Methods whose rows (``self-consistency [agents=k]`` at every k) the headroom table reports as bounds and
baselines: no secondary test is made of them."""


def read_paired(path: Path) -> list[Paired]:
    """The rows of a report's paired.json."""
    try:
        return [from_json(Paired, row) for row in parse_json(utf8(path.read_bytes()))]
    except (OSError, ValueError, TypeError) as err:
        raise DelibError(f"{path} is not a report's paired.json ({err}); rerun `delib report`") from err


def counts(path: Path) -> dict[str, dict[str, dict[str, float]]]:
    """label -> benchmark column -> {n, correct, tokens_per_question}, from a report's report.csv (the pooled
    column summed over the benchmarks, tokens weighted by questions)."""
    table: dict[str, dict[str, dict[str, float]]] = {}
    try:
        with path.open(newline="") as f:
            for row in csv.DictReader(f):
                # a column is "<benchmark/split>:<field>"; own-data benchmarks hold colons too ("numeric:<path>")
                columns = sorted({key.rsplit(":", 1)[0] for key in row if key.endswith(":n") and row[key]})
                table[row["method"]] = {c: {"n": int(row[f"{c}:n"]), "correct": int(row[f"{c}:correct"]),
                                            "tokens_per_question": float(row[f"{c}:tokens_per_question"])}
                                        for c in columns}
                table[row["method"]][POOLED] = _pooled(table[row["method"]].values())
    except (OSError, ValueError, KeyError) as err:
        raise DelibError(f"{path} is not a report's report.csv ({type(err).__name__}: {err}); rerun "
                         "`delib report`") from err
    return table


def _pooled(cells: Any) -> dict[str, float]:
    cells = list(cells)
    n = sum(c["n"] for c in cells)
    tokens = sum(c["tokens_per_question"] * c["n"] for c in cells) / max(n, 1)
    return {"n": n, "correct": sum(c["correct"] for c in cells), "tokens_per_question": tokens}


def some_agent_right(rows: Sequence[Response]) -> dict[str, float]:
    """Share of questions where at least one agent's round-0 answer is right (the most any vote over the
    round-0 pool can reach), with its question count."""
    right: dict[str, bool] = {}
    for r in (r for r in rows if r.round == 0):
        right[r.example_id] = right.get(r.example_id, False) or r.correct
    return {"n": len(right), "share": sum(right.values()) / max(len(right), 1)}


def headroom(stores: Sequence[tuple[str, TreeStore, int]]) -> dict[str, Any]:
    """The headroom table's store-side columns per benchmark and pooled: some agent right at round 0, and
    each signal's AUROC for answer correctness (``report/signals.py``) on the look's questions."""
    pooled: list[Response] = []
    out: dict[str, Any] = {}
    for column, store, n in stores:
        rows = responses(store, None, n)
        pooled += rows
        out[column] = {"some_agent_right": some_agent_right(rows), "auroc": _aurocs(rows)}
    out[POOLED] = {"some_agent_right": some_agent_right(pooled), "auroc": _aurocs(pooled)}
    return out


def _aurocs(rows: Sequence[Response]) -> dict[str, Any]:
    return {row.signal: {"n": row.n, "auroc": row.auroc, "ci95": row.ci95} for row in signal_rows(rows)}


def look_record(look: int, report: Path, learned: str, against: Sequence[Path] = ()) -> dict[str, Any]:
    """The look's record (module docstring) from the report folder ``report``; ``learned`` is the primary
    arm's label there. ``against``: report folders of the same runs paired with other references
    (self-consistency at k = 3 and 6), whose learned rows the record keeps under ``learned_against``."""
    paired = read_paired(report / "paired.json")
    pooled = {p.label: p for p in paired if p.column == POOLED and p.budget is None}
    missing = [label for label in (learned, ORACLE) if label not in pooled]
    if missing:
        raise DelibError(f"{report / 'paired.json'} has no pooled row of {', '.join(missing)}; the look needs the "
                         "learned policy and the oracle paired with the best rule")
    decision = decide(look, pooled[learned], pooled[ORACLE])
    against_rows = [read_paired(r / "paired.json") for r in against]
    _require_same_questions(look, paired, [p for rows in against_rows for p in rows], learned)
    table = counts(report / "report.csv")
    methods = {label: {column: {**cells, **_against(paired, label, column)} for column, cells in by_column.items()}
               for label, by_column in table.items()}
    equal = _equal_tokens(paired)
    others = _learned_against(against_rows, learned)
    _require_secondaries(learned, set(methods[learned]), equal, others)
    _adjust_secondary(methods, equal, others, learned, pooled[learned].reference)
    return {"look": look, "reference": pooled[learned].reference, "learned": learned,
            "decision": to_json(decision), "methods": methods, "equal_tokens": equal, "learned_against": others}


def _require_same_questions(look: int, paired: Sequence[Paired], against: Sequence[Paired], learned: str) -> None:
    """Refuse a look in which any row, against the best rule (``paired``) or another reference (``against``),
    does not cover exactly the learned arm's questions per benchmark and pooled, as paired with the best rule
    (an arm that failed on a question would otherwise be paired on fewer, silently): every arm of a look
    answers the same question ids. A row against self-consistency at equal tokens may cover fewer columns (no
    k fits its budget there), never fewer questions of a column."""
    size = {p.column: p.n for p in paired if p.label == learned and p.budget is None}
    short = sorted(_shortfall(p, size.get(p.column)) for p in (*paired, *against)
                   if p.unpaired or (p.budget is None and p.n != size.get(p.column)))
    if short:
        raise DelibError(f"look {look}: {short[0]} ({len(short)} such rows); every arm answers the block's "
                         "questions: rerun the look's replays")


def _shortfall(p: Paired, size: int | None) -> str:
    """What a row misses of the learned arm's ``size`` questions on its column (None: the learned arm has no
    such column)."""
    where = f"{p.label} against {p.reference} on {p.column}"
    if size is None:
        return f"{where}, a benchmark the learned arm does not answer ({p.n} questions)"
    return f"{where} covers {p.n} of its {size} questions ({p.unpaired} unpaired)"


def _require_secondaries(learned: str, columns: set[str], equal: dict[str, dict[str, Any]],
                         others: dict[str, dict[str, Any]]) -> None:
    """Refuse a look whose registered comparisons of the learned policy with self-consistency (at equal
    tokens, and at each k of ``LEARNED_AGAINST_K``) are not all there, each on every benchmark and pooled: the
    Holm family would shrink, or grow, silently (a learned arm cheaper than one sample, self-consistency runs
    of other settings, a reference report missing or extra)."""
    wanted = {sampling_label(k) for k in LEARNED_AGAINST_K}
    gaps = [f"references {sorted(others)} instead of {sorted(wanted)}"] if set(others) != wanted else []
    comparisons = {"at equal tokens": equal.get(learned, {}),
                   **{f"against {r}": others[r] for r in sorted(wanted & set(others))}}
    gaps += [f"{name}: {sorted(columns - set(cells))}" for name, cells in comparisons.items() if columns - set(cells)]
    if gaps:
        raise DelibError(f"the look misses registered comparisons of {learned} with self-consistency "
                         f"({'; '.join(gaps)}); rerun its replays with the same settings")


def _learned_against(against: Sequence[Sequence[Paired]], learned: str) -> dict[str, dict[str, Any]]:
    """reference -> benchmark column (or pooled) -> the learned policy against that reference (``against``:
    each reference report's paired rows)."""
    table: dict[str, dict[str, Any]] = {}
    for rows in against:
        for p in rows:
            if p.label == learned and p.budget is None:
                table.setdefault(p.reference, {})[p.column] = {"n": p.n, **_cell(p)}
    return table


def _adjust_secondary(methods: dict[str, dict[str, Any]], equal: dict[str, dict[str, Any]],
                      others: dict[str, dict[str, Any]], learned: str, reference: str) -> None:
    """Adds mcnemar_p_holm beside each registered secondary comparison's mcnemar_p (PREREGISTRATION,
    amendments 1 and 3), per benchmark and pooled: the learned policy against the best rule per benchmark
    (pooled it is the primary, which the sequential boundary tests alone), against self-consistency at equal tokens
    and at k = 3 and 6 (``others``); every other arm the look replays against the best rule: the SFT policy,
    each constant rule of the grid the rule was tuned on (always-resample too: amendment 2 tunes it with the
    RESAMPLE action), and the extensions' arms (the sampling baselines and agreement-resample), but the best
    rule's own method replayed again under its name (``reference``: a comparison with itself). The oracle's
    and self-consistency's own rows are the headroom table's, not tests."""
    itself = rule_method(reference)
    tested = [label for label in methods if not _headroom(label) and label != itself]
    cells = [cell for label in tested for column, cell in methods[label].items()
             if "mcnemar_p" in cell and not (label == learned and column == POOLED)]
    cells += [*equal.get(learned, {}).values(), *(cell for by_column in others.values() for cell in by_column.values())]
    for cell, adjusted in zip(cells, holm([cell["mcnemar_p"] for cell in cells])):
        cell["mcnemar_p_holm"] = adjusted


def rule_method(reference: str) -> str:
    """The label under which the look replays the best rule again among the constants (``best rule:
    agreement-resample`` -> ``agreement-resample``; a tuned threshold stays in it, ``... t=0.7``, and then
    matches no constant): a row that repeats the reference."""
    return reference.removeprefix(BEST)


def _headroom(label: str) -> bool:
    """The headroom table's rows: bounds and baselines it reports, not comparisons it tests."""
    return label.split(" [")[0] in HEADROOM_METHODS


def _equal_tokens(paired: list[Paired]) -> dict[str, dict[str, Any]]:
    """label -> benchmark column (or pooled) -> the row against self-consistency at its token budget."""
    table: dict[str, dict[str, Any]] = {}
    for p in (p for p in paired if p.budget is not None):
        table.setdefault(p.label, {})[p.column] = {"k": list(p.budget), "n": p.n, **_cell(p)}
    return table


def _against(paired: list[Paired], label: str, column: str) -> dict[str, Any]:
    row = next((p for p in paired if p.label == label and p.column == column and p.budget is None), None)
    return {} if row is None else _cell(row)


def _cell(p: Paired) -> dict[str, Any]:
    """One paired comparison as the record keeps it: the discordant counts, exact McNemar p, the accuracy
    difference and the token ratio, each with its paired bootstrap 95% interval."""
    return {"only_method": p.only_row, "only_reference": p.only_reference, "mcnemar_p": p.mcnemar_p,
            "diff": p.accuracy_diff, "diff_ci95": list(p.accuracy_diff_ci95), "token_ratio": p.token_ratio,
            "token_ratio_ci95": list(p.token_ratio_ci95)}
