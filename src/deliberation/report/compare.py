"""``delib compare``: learned policies against the tuned best rule, at the team level, on held-out trees.

Every arm is replayed over the held-out stores (``runs/variants.py``, as ``delib evaluate`` replays it, into
``<out>/<store>/<arm>``): each learned policy (mpdf with that checkpoint), the SFT checkpoint when given,
the best rule of ``delib tune-rules`` (its best_rule.json), the constant rules and the oracle
(``methods/oracle.py``, an upper bound); ``--arms primary`` keeps the learned policies and the best rule only
(``ARM_SETS``). The table holds each arm's whole-episode accuracy (the team's vote)
and tokens per question per benchmark split and pooled; the paired section is ``report/paired.py``'s table
of every arm against the best rule, computed from the same run directories as ``delib report`` would
(exact McNemar p, paired bootstrap 95% intervals). Written as team.json and team.md, with team.png
(``report/compare_plot.py``) when matplotlib is installed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from deliberation.errors import DelibError, repeated
from deliberation.files import write_json_atomic, write_text_atomic
from deliberation.methods.options import Variant
from deliberation.methods.oracle import SPEC as ORACLE_SPEC
from deliberation.report.loading import RunResult, load_results
from deliberation.report.paired import POOLED, Outcome, Paired, outcomes, paired_markdown, paired_table
from deliberation.report.plots import PlotOutcome
from deliberation.report.compare_plot import TEAM_PNG, paired_plot
from deliberation.policy.split import SPLIT_FILE, trained_on
from deliberation.runs.tune_rules import Rule, constants, read_best_rule
from deliberation.runs.variants import StoreSettings, replay_variants, store_names
from deliberation.types import to_json

TEAM_JSON, TEAM_MD = "team.json", "team.md"
LOG = logging.getLogger("deliberation")
BEST = "best rule: "  # the best rule's row label is this and the rule's label
SFT_PREFIX = "sft ["  # the SFT checkpoint's row label is this, the checkpoint and "]"
ORACLE = ORACLE_SPEC.name  # the oracle's row label: its method's name
ALL_ARMS, PRIMARY_ARMS = "all", "primary"
ARM_SETS = (ALL_ARMS, PRIMARY_ARMS)
"""The arm sets ``delib compare --arms`` replays (``Comparison.arms``; the paired experiment's two-round
secondary replays ``primary``)."""


@dataclass(frozen=True, kw_only=True)
class Comparison(StoreSettings):
    """What to compare: held-out stores and their replay settings, the learned checkpoints, the tuned rule."""

    rule: str
    """best_rule.json of ``delib tune-rules`` (tuned on training trees)."""
    policies: tuple[str, ...]
    """mpdf checkpoints (paths or shipped names), one row each."""
    sft: str | None = None
    """The SFT checkpoint (the reference policy of training), a row of its own."""
    arms: str = ALL_ARMS
    """Which arms to replay: all (the learned policies, the SFT checkpoint, the best rule, the other constant
    rules and the oracle) or primary (the learned policies and the best rule only: at two rounds every other
    arm's round-2 nodes would be generated too, the oracle's for every joint round-1 action)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.arms not in ARM_SETS:
            raise DelibError(f"unknown arms {self.arms!r}; choose one of {', '.join(ARM_SETS)}")
        if self.arms == PRIMARY_ARMS and self.sft is not None:
            raise DelibError("--sft is a row of --arms all only; leave it out with --arms primary")


@dataclass(frozen=True)
class TeamRow:
    """One arm on one benchmark split (or pooled): whole-episode accuracy and tokens per question."""

    label: str
    column: str
    n: int
    accuracy: float
    tokens_per_question: float


def learned_label(policy: str) -> str:
    """The row label of the mpdf arm with checkpoint ``policy`` (team.json lists them under "learned", so
    scripts pairing a report with an arm read the label rather than spell it)."""
    return f"mpdf [{policy}]"


def arms(cmp: Comparison, rule: Rule) -> list[Variant]:
    """The rows: learned policies, the SFT checkpoint, the best rule, the other constants, the oracle (with
    ``arms`` primary: the learned policies and the best rule)."""
    given = [p for p in (*cmp.policies, cmp.sft) if p is not None]
    twice = repeated(given)
    if twice is not None or not cmp.policies:
        flags = "--policy and --sft" if twice is not None and twice == cmp.sft else "--policy"
        raise DelibError(f"checkpoint {twice!r} is given twice ({flags}); give each once" if twice else
                         "no learned policy given; pass --policy CKPT[,CKPT]")
    learned = [Variant(learned_label(p), "mpdf", f"policy-{k}", policy=p) for k, p in enumerate(cmp.policies, 1)]
    sft = [Variant(f"{SFT_PREFIX}{cmp.sft}]", "mpdf", "sft", policy=cmp.sft)] if cmp.sft is not None else []
    best = replace(rule.variant(), label=BEST + rule.label, directory="best-rule")
    if cmp.arms == PRIMARY_ARMS:
        return [*learned, best]
    others = [Variant(c, c, c) for c in constants() if c != rule.method]
    return [*learned, *sft, best, *others, Variant(ORACLE, ORACLE, ORACLE)]


def check_held_out(cmp: Comparison) -> None:
    """Refuse held-out stores sharing a question with the stores the rule was tuned on (best_rule.json's
    ``trees``) or with the questions a checkpoint trained on (the split.json beside it; a policy-gradient
    run's lists its own training questions, so pass its SFT start as ``--sft`` to check those too). What
    cannot be checked (a tuning store not found from here, a checkpoint without split.json, e.g. a shipped
    one) is passed over with a warning."""
    held_out = {q: store for store in cmp.trees for q in _questions(store) if not cmp.ids or q in cmp.ids}
    for why, questions in _seen(cmp):
        leaked = sorted(questions & held_out.keys())
        if leaked:
            raise DelibError(f"question {leaked[0]} of {held_out[leaked[0]]} is not held out: {why} ({len(leaked)} "
                             "such questions); compare on stores of other questions")


def _seen(cmp: Comparison) -> list[tuple[str, set[str]]]:
    """(why, question ids) of every source the held-out questions must avoid."""
    from deliberation.policy.checkpoint import read_checkpoint
    from deliberation.policy.shipped import checkpoint_path

    record = read_best_rule(cmp.rule)
    missing = [t for t in record.trees if not Path(t).is_dir()]
    if missing:
        LOG.warning("cannot check that the held-out stores differ from the tuning store %s (%s names it; not found "
                    "from here): run delib compare from the folder tune-rules ran in to check", missing[0], cmp.rule)
    sources = [(f"the rule was tuned on {t}", {q for q in _questions(t) if not record.ids or q in record.ids})
               for t in record.trees if t not in missing]
    for ckpt in (p for p in (*cmp.policies, cmp.sft) if p is not None):
        read_checkpoint(checkpoint_path(ckpt))  # a file that is none is named so, before its split is looked for
        trained = trained_on(checkpoint_path(ckpt))
        if trained is not None:
            sources.append((f"{ckpt} trained on it", set(trained)))
        else:
            LOG.warning("cannot check that %s did not train on the held-out questions (no %s beside it: a shipped "
                        "checkpoint without one, or one copied without it); copy its training run's %s beside it to "
                        "check", ckpt, SPLIT_FILE, SPLIT_FILE)
    return sources


def _questions(store: str) -> list[str]:
    from deliberation.trees.store import open_store

    return sorted(open_store(store).built)


def team_rows(results: Sequence[RunResult], labels: Sequence[str]) -> list[TeamRow]:
    """Each label's accuracy and tokens per question per benchmark split, and pooled when there are several."""
    table = outcomes(results)
    rows = []
    for label in labels:
        columns = sorted({q[0] for q in table[label]})
        rows += [_row(label, col, [o for q, o in table[label].items() if q[0] == col]) for col in columns]
        rows += [_row(label, POOLED, list(table[label].values()))] if len(columns) > 1 else []
    return rows


def _row(label: str, column: str, done: Sequence[Outcome]) -> TeamRow:
    n = len(done)
    return TeamRow(label, column, n, sum(c for c, _ in done) / n, sum(t for _, t in done) / n)


def compare_team(cmp: Comparison, out: str | Path, data_dir: str | None = None,
                 progress: bool = False) -> tuple[list[TeamRow], list[Paired]]:
    """Replay every arm over the held-out stores into ``out``; write team.json and team.md there."""
    record = read_best_rule(cmp.rule)
    if record.rounds != cmp.rounds:  # a registered use (a two-round secondary of a rule tuned at one), so said
        LOG.warning("delib: note: %s was tuned at --rounds %d; it is compared here at --rounds %d", cmp.rule,
                    record.rounds, cmp.rounds)
    rule = record.rule
    check_held_out(cmp)
    variants = arms(cmp, rule)
    replay_variants(cmp.replays(), variants, out, data_dir, progress)
    out = Path(out)
    results = load_results([out / name / v.directory for name in store_names(cmp.trees) for v in variants])
    rows = team_rows(results, [v.label for v in variants])
    paired = paired_table(results, reference=BEST + rule.label)
    figure = paired_plot(paired, out / TEAM_PNG)
    write_text_atomic(out / TEAM_MD, team_markdown(rule, rows, paired, figure))
    write_json_atomic(out / TEAM_JSON, team_record(cmp, rule, rows, paired))  # last: it marks the comparison done
    return rows, paired


def team_record(cmp: Comparison, rule: Rule, rows: Sequence[TeamRow], paired: Sequence[Paired]) -> dict[str, Any]:
    """team.json: the settings, the reference rule, the rows and the paired comparisons."""
    return {"trees": list(cmp.trees), "rounds": cmp.rounds, "arms": cmp.arms, "rule_file": cmp.rule,
            "reference": BEST + rule.label,
            "learned": [learned_label(p) for p in cmp.policies], "rule": to_json(rule),
            "rows": [to_json(r) for r in rows], "paired": [to_json(p) for p in paired]}


def team_markdown(rule: Rule, rows: Sequence[TeamRow], paired: Sequence[Paired], figure: PlotOutcome) -> str:
    """team.md: the team-level table, then every row paired with the best rule, then the figure (or why not)."""
    head = "| row | benchmark | n | accuracy | tokens/question |\n| --- | --- | ---: | ---: | ---: |\n"
    lines = "".join(f"| {r.label} | {r.column} | {r.n} | {r.accuracy:.3f} | {r.tokens_per_question:.0f} |\n"
                    for r in rows)
    return (f"# Team-level comparison\n\n{head}{lines}\n## Paired against {BEST}{rule.label}\n\n"
            f"{paired_markdown(paired)}\n{_figure_line(figure)}\n")


def _figure_line(figure: PlotOutcome) -> str:
    return f"![{figure.name}]({figure.path.name})" if figure.path else f"No figure: {figure.note}."

