"""``delib tune-rules``: the best fixed rule on training trees, the reference a learned policy must beat.

The default grid of an action set is data (``DEFAULT_GRIDS``): the rules it names, simplest first, a rule
that reads the critic at each threshold of ``THRESHOLDS``. Under the default set, ``paper``, that is the grid
docs/results/paired/PREREGISTRATION.md fixes: always-persist, always-refine, always-concede,
agreement-threshold, and confidence-threshold and agreement-then-confidence at each threshold; ``resample``
adds the RESAMPLE rules. A rule registered later (``policy/rules.py`` ``FIXED_RULES``) joins no grid until a
grid names it: here, or in a grid file (``--grid``), so a registered grid never changes behind its
registration. Every rule is replayed over every store
(``runs/variants.py``: as ``delib evaluate`` replays it, one run directory per rule and store), its questions
pooled over the stores, and the best is chosen by whole-episode accuracy, ties by fewer tokens per question,
then by the simpler rule (``FixedRule.simplicity``, the lower threshold first). Numbers are compared as exact
fractions, so equal counts tie whatever the float rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Sequence

from deliberation.files import write_json_atomic
from deliberation.methods.options import MethodOptions, Variant
from deliberation.policy.rules import FIXED_RULES, ConstantPolicy
from deliberation.runs.directory import Summary
from deliberation.runs.variants import TuningStores, pooled_counts, replay_variants
from deliberation.actions import EXTENDED_ACTIONS, PAPER_ACTIONS, check_action_set
from deliberation.errors import DelibError, existing, read_json, repeated, require_at_least
from deliberation.types import ADDED_LATER, from_json, to_json

THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
BEST_RULE = "best_rule.json"
BEST_RULE_FIX = "pass the best_rule.json `delib tune-rules` wrote"


@dataclass(frozen=True, kw_only=True)
class Tuning(TuningStores):
    """What to tune on: training stores, the replay settings every rule shares, the rules' action set."""

    learned = "a rule tuned"

    actions: str = PAPER_ACTIONS
    """The actions the tuned rules may take (``actions.ACTION_SETS``): ``paper``, PERSIST / REFINE / CONCEDE
    (the pre-registered grid), or ``resample``, adding the RESAMPLE rules (stores with 2N round-0 samples:
    ``delib tree --samples``)."""
    grid: str | None = None
    """A frozen grid (a JSON list of {"method", "threshold"}), e.g. the one a registration fixed
    (docs/results/paired/rule_grid.json): exactly these rules, whatever is registered today. Default: the
    rules ``DEFAULT_GRIDS`` names for --actions."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_action_set(self.actions)
        require_at_least("--rounds", self.rounds, 1, "(with no deliberation round every rule answers alike: "
                         "there is nothing to tune)")
        if self.grid is not None:
            read_grid(self.grid)  # a bad file is refused before anything is replayed


_PAPER_GRID = ("always-persist", "always-refine", "always-concede", "agreement-threshold", "confidence-threshold",
               "agreement-then-confidence")
DEFAULT_GRIDS: dict[str, tuple[str, ...]] = {
    PAPER_ACTIONS: _PAPER_GRID,
    EXTENDED_ACTIONS: (*_PAPER_GRID, "always-resample", "agreement-resample"),
}
"""The rules each action set's default grid tries (the paper's six are PREREGISTRATION.md's); a new rule is
tried when it is named here or in a ``--grid`` file, never because it is registered."""


def simplest_first(actions: str = PAPER_ACTIONS) -> list[str]:
    """The rules of the default grid under ``actions``, simplest first."""
    return sorted(DEFAULT_GRIDS[actions], key=lambda name: FIXED_RULES[name].simplicity)


def constants(actions: str = PAPER_ACTIONS) -> list[str]:
    """The rules among them that take one action whatever they observe, simplest first."""
    return [name for name in simplest_first(actions) if isinstance(FIXED_RULES[name].policy(0.5), ConstantPolicy)]


@dataclass(frozen=True)
class Rule:
    """A grid point: a fixed-rule method and its threshold (None for rules that read none)."""

    method: str
    threshold: float | None = None

    @property
    def label(self) -> str:
        return self.method if self.threshold is None else f"{self.method} t={self.threshold}"

    def variant(self) -> Variant:
        """The rule as a replayed variant; its directory is its label without spaces."""
        options = {} if self.threshold is None else {"confidence_threshold": self.threshold}
        return Variant(self.label, self.method, self.label.replace(" t=", "-"), **options)


@dataclass(frozen=True)
class GridRow:
    """A rule's numbers pooled over the stores (accuracy also per store)."""

    method: str
    threshold: float | None
    label: str
    n: int
    correct: int
    tokens: int
    accuracy: float
    tokens_per_question: float
    by_store: dict[str, float] = field(default_factory=dict)


def grid(actions: str = PAPER_ACTIONS) -> list[Rule]:
    """The grid under ``actions`` (module docstring): rules reading no threshold, then the others at each."""
    names = simplest_first(actions)
    return ([Rule(m) for m in names if not FIXED_RULES[m].confidence] +
            [Rule(m, t) for m in names if FIXED_RULES[m].confidence for t in THRESHOLDS])


def read_grid(path: str) -> list[Rule]:
    """The rules of the frozen grid at ``path``; one line when it is not one (unknown rule, bad shape, a rule
    twice)."""
    fix = 'give the grid file a registration froze (a JSON list of {"method", "threshold"})'
    raw = read_json(existing(path, "rule grid", fix), fix)
    if not isinstance(raw, list) or not all(map(_grid_entry, raw)):
        raise DelibError(f"{path} is not a rule grid (each entry an object with a method name and a threshold "
                         f"number or null); {fix}")
    rules = [Rule(r["method"], None if r["threshold"] is None else float(r["threshold"])) for r in raw]
    unknown = [r.method for r in rules if r.method not in FIXED_RULES]
    if unknown or not rules:
        raise DelibError(f"{path} names no fixed rule or an unknown one ({', '.join(unknown) or 'empty'}); the rules "
                         f"are {', '.join(FIXED_RULES)}")
    twice = repeated(rules)
    if twice is not None:
        raise DelibError(f"{path} names {twice.label} twice; name each rule once")
    for rule in (r for r in rules if r.threshold is not None):
        try:
            MethodOptions(confidence_threshold=rule.threshold)  # the option's own bounds, as delib run checks it
        except DelibError as err:
            raise DelibError(f"{path}, rule {rule.label}: {str(err).removeprefix('--confidence-threshold ')}; "
                             f"{fix}") from err
    return rules


def _grid_entry(entry: object) -> bool:
    """Whether ``entry`` is a grid point as written: {"method": name, "threshold": a number or null}."""
    return (isinstance(entry, dict) and isinstance(entry.get("method"), str) and "threshold" in entry
            and (entry["threshold"] is None or isinstance(entry["threshold"], (int, float))))


def write_grid(path: str | Path, rules: Sequence[Rule]) -> None:
    """Freeze ``rules`` as a grid file (``read_grid`` reads it)."""
    write_json_atomic(Path(path), [{"method": r.method, "threshold": r.threshold} for r in rules])


def pooled(rule: Rule, summaries: dict[str, Summary]) -> GridRow:
    """``rule``'s row from its summary on each store (store name -> summary)."""
    n, correct, tokens = pooled_counts(summaries)
    return GridRow(rule.method, rule.threshold, rule.label, n, correct, tokens, correct / n if n else 0.0,
                   tokens / n if n else 0.0, {name: s.accuracy for name, s in summaries.items()})


def preference(row: GridRow) -> tuple[Fraction, Fraction, int, float]:
    """Smaller is better: higher accuracy, fewer tokens per question, simpler rule, lower threshold."""
    n = max(row.n, 1)
    return (-Fraction(row.correct, n), Fraction(row.tokens, n), FIXED_RULES[row.method].simplicity,
            row.threshold or 0.0)


def best(rows: Sequence[GridRow]) -> GridRow:
    """The chosen rule (module docstring)."""
    return min(rows, key=preference)


@dataclass(frozen=True)
class BestRule:
    """best_rule.json: the rule ``delib tune-rules`` chose, with its numbers pooled over the stores, what it was
    tuned on (rounds, stores, questions), how it was chosen (in words) and the whole grid. ``delib compare``
    replays its rule and refuses held-out stores sharing a question with its ``trees``."""

    method: str
    threshold: float | None
    label: str
    accuracy: float
    tokens_per_question: float
    n: int
    rounds: int
    trees: tuple[str, ...]
    chosen_by: str
    grid: tuple[GridRow, ...]
    ids: tuple[str, ...] | None = field(default=None, metadata=ADDED_LATER)
    """Tuned on only these questions of its stores (``--ids``); None: on every question (and not written)."""

    @property
    def rule(self) -> Rule:
        """The chosen grid point, to replay."""
        return Rule(self.method, None if self.threshold is None else float(self.threshold))


def tune(tuning: Tuning, out: str | Path, data_dir: str | None = None,
         progress: bool = False) -> tuple[GridRow, list[GridRow]]:
    """Replay the grid over ``tuning.trees`` into ``out``, write ``out/best_rule.json``: (best, grid rows)."""
    rules = read_grid(tuning.grid) if tuning.grid is not None else grid(tuning.actions)
    runs = replay_variants(tuning.replays(), [r.variant() for r in rules], out, data_dir, progress)
    rows = [pooled(rule, {name: summaries[k] for name, summaries in runs.items()}) for k, rule in enumerate(rules)]
    chosen = best(rows)
    write_best_rule(Path(out) / BEST_RULE, best_rule_record(chosen, rows, tuning))
    return chosen, rows


def best_rule_record(chosen: GridRow, rows: Sequence[GridRow], tuning: Tuning) -> BestRule:
    """The record of ``chosen`` among the grid ``rows`` under ``tuning``."""
    return BestRule(chosen.method, chosen.threshold, chosen.label, chosen.accuracy, chosen.tokens_per_question,
                    chosen.n, tuning.rounds, tuple(tuning.trees),
                    "whole-episode accuracy pooled over the stores, then fewer tokens per question, then the "
                    f"simpler rule ({' < '.join(simplest_first(tuning.actions))}; lower threshold first)",
                    tuple(rows), tuple(tuning.ids) if tuning.ids else None)


def write_best_rule(path: Path, record: BestRule) -> None:
    """Write best_rule.json (``read_best_rule`` reads it back equal)."""
    write_json_atomic(path, to_json(record))


def read_best_rule(path: str | Path) -> BestRule:
    """The best_rule.json at ``path``; a file that is not one (unreadable, a field missing or of another type, a
    method that is no fixed rule, a threshold the method does not read or lacks) is a one-line DelibError."""
    raw = read_json(existing(path, "best rule", BEST_RULE_FIX), BEST_RULE_FIX)
    try:
        record = from_json(BestRule, raw)
    except (TypeError, ValueError) as err:
        raise DelibError(f"{path} is not a best_rule.json of `delib tune-rules` ({err}); {BEST_RULE_FIX}") from err
    if record.method not in FIXED_RULES or (record.threshold is None) == FIXED_RULES[record.method].confidence:
        raise DelibError(f"{path} names no tuned rule (method {record.method!r}, threshold {record.threshold!r}); "
                         f"{BEST_RULE_FIX}")
    return record


def grid_table(chosen: GridRow, rows: Sequence[GridRow]) -> str:
    """The grid as a markdown table, the chosen rule marked."""
    head = "| rule | accuracy | tokens/question | n |\n| --- | ---: | ---: | ---: |\n"
    return head + "".join(f"| {r.label}{' (best)' if r == chosen else ''} | {r.accuracy:.3f} | "
                          f"{r.tokens_per_question:.0f} | {r.n} |\n" for r in rows)
