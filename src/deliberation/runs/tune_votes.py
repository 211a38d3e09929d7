"""``delib tune-votes``: the softmax temperature of each confidence-weighted vote (CISC) on training trees.

CISC (Taubenfeld et al. 2025) weighs each sample's ballot by softmax(confidence / T) and tunes T per model
and confidence method on held-out data (their Appendix D): the best T differs by orders of magnitude between
a P(True) in [0, 1] and a mean token log-probability, and an untuned T makes CISC a weak baseline. Every
method that reads ``vote_temperature`` (``methods.taking``: cisc, cisc-logprob) is replayed over the stores
at each T of ``TEMPERATURES`` with ``agents`` samples (default: every round-0 sample a store holds), as
``delib evaluate`` replays it (``runs/variants.py``), its questions pooled over the stores. The T with the
highest whole-episode accuracy is chosen, ties going to the higher T (nearer the plain vote, the simpler);
tokens do not depend on T, since every sample is drawn. ``vote_temperatures.json`` records each method's T
with its accuracy and the grid; ``experiments/sampling_replays.sh`` reads it (``VOTES``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Sequence

from deliberation import methods
from deliberation.config import require_draws
from deliberation.files import write_json_atomic
from deliberation.methods.options import Variant
from deliberation.runs.directory import Summary
from deliberation.runs.replay import Replay
from deliberation.runs.variants import TuningStores, pooled_counts, replay_variants
from deliberation.trees.store import open_store
from deliberation.types import to_json

TEMPERATURES = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
"""The grid: from nearly "the most confident sample wins" to nearly the plain vote, for both confidences."""
VOTES = "vote_temperatures.json"
OPTION = "vote_temperature"


@dataclass(frozen=True, kw_only=True)
class VoteTuning(TuningStores):
    """What to tune on: training stores, the replay settings every T shares, the samples per vote."""

    learned = "a vote temperature tuned"

    agents: int | None = None
    """Samples per vote (default: every round-0 sample each store holds, ``delib tree --samples``)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.agents is not None:
            require_draws("--agents", self.agents)

    def replays(self) -> list[Replay]:
        return [replace(r, agents=self.agents or open_store(r.trees).manifest.samples) for r in super().replays()]


@dataclass(frozen=True)
class VoteRow:
    """A method at one T, its questions pooled over the stores (accuracy also per store)."""

    method: str
    temperature: float
    n: int
    correct: int
    accuracy: float
    tokens_per_question: float
    by_store: dict[str, float]


def vote_methods() -> list[str]:
    return methods.taking(OPTION)


def grid() -> list[Variant]:
    """Every vote method at every T of ``TEMPERATURES``."""
    return [Variant(f"{m} T={t}", m, f"{m}-T{t}", vote_temperature=t) for m in vote_methods() for t in TEMPERATURES]


def pooled(variant: Variant, summaries: dict[str, Summary]) -> VoteRow:
    """``variant``'s row from its summary on each store (store name -> summary)."""
    n, correct, tokens = pooled_counts(summaries)
    return VoteRow(variant.method, variant.vote_temperature, n, correct, correct / n if n else 0.0,
                   tokens / n if n else 0.0, {name: s.accuracy for name, s in summaries.items()})


def best(rows: Sequence[VoteRow]) -> VoteRow:
    """The highest accuracy (exact fractions), then the higher T."""
    return max(rows, key=lambda r: (Fraction(r.correct, max(r.n, 1)), r.temperature))


def tune(tuning: VoteTuning, out: str | Path, data_dir: str | None = None,
         progress: bool = False) -> tuple[dict[str, VoteRow], list[VoteRow]]:
    """Replay the grid over ``tuning.trees`` into ``out``, write ``out/vote_temperatures.json``: (method ->
    chosen row, every row)."""
    variants = grid()
    runs = replay_variants(tuning.replays(), variants, out, data_dir, progress)
    rows = [pooled(v, {name: summaries[k] for name, summaries in runs.items()}) for k, v in enumerate(variants)]
    chosen = {m: best([r for r in rows if r.method == m]) for m in vote_methods()}
    write_json_atomic(Path(out) / VOTES, votes_record(chosen, rows, tuning))
    return chosen, rows


def votes_record(chosen: dict[str, VoteRow], rows: Sequence[VoteRow], tuning: VoteTuning) -> dict[str, Any]:
    """vote_temperatures.json: each method's T and numbers, how it was chosen, the whole grid."""
    return {"methods": {m: {OPTION: r.temperature, "accuracy": r.accuracy, "n": r.n} for m, r in chosen.items()},
            "agents": tuning.agents, "trees": list(tuning.trees),  # rounds: none (the votes sample only)
            "chosen_by": "whole-episode accuracy pooled over the stores, then the higher temperature",
            "grid": [to_json(r) for r in rows], **({"ids": list(tuning.ids)} if tuning.ids else {})}


def grid_table(chosen: dict[str, VoteRow], rows: Sequence[VoteRow]) -> str:
    """The grid as a markdown table, each method's chosen T marked."""
    head = "| method | T | accuracy | n |\n| --- | ---: | ---: | ---: |\n"
    return head + "".join(f"| {r.method} | {r.temperature:g}{' (best)' if chosen[r.method] == r else ''} | "
                          f"{r.accuracy:.3f} | {r.n} |\n" for r in rows)
