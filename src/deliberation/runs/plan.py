"""``delib experiment FILE --plan``: what a grid will cost, printed before anything runs, with no server asked.

For every cell (backbone x benchmark x method x seed): its questions, the LLM calls a question costs (the
method's ``call_bounds``, methods/calls.py: a range where an early stop decides), and from them the cell's
calls, generated tokens and hours at ``throughput`` generated tokens per second.

What is known and what is assumed:
- Questions are counted from the benchmark's local data (a data folder or an installed package; the HF hub is
  never asked); where none is here, a benchmark with a limit counts at its limit.
- Calls follow from the options, not from the model: cot 1, self-consistency k, debate N x (R + 1), ranges
  for the methods that stop early.
- Tokens do not: an answer call is assumed to generate ``ANSWER_TOKENS`` of its benchmark (measured below,
  for another model; ``--answer-tokens`` replaces them), at most the engine's max_tokens; a critic call one
  token (eight with verbal confidence, ``engine/confidence.critic_request``). Prompt tokens are not counted:
  a server with prefix caching (vLLM's) reads the shared prefixes once, and decode sets the pace.
- Round-0 answers are shared: methods that send the round loop's requests (``Method.tree_requests``) with
  the same seed and sampling settings ask the same round-0 questions, which the response cache generates
  once per backbone and benchmark (``runs/experiment.py``). The totals count each such answer once.
"""

from __future__ import annotations

import math
import os
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from deliberation import benchmarks, methods
from deliberation.benchmarks.selection import load_selected
from deliberation.config import Selection
from deliberation.errors import DelibError
from deliberation.methods.base import MethodConfig
from deliberation.methods.calls import Calls
from deliberation.runs.experiment import Position, positions
from deliberation.runs.experiment_file import ExperimentConfig

ANSWER_TOKENS: dict[str, int] = {"gsm8k": 359, "math": 607, "aime24": 814, "amc23": 650, "mmlu": 423,
                                 "humaneval": 430}
"""Mean generated tokens of one answer, by benchmark: the committed self-consistency cells of Table 1
(docs/results/table1/<benchmark>/self-consistency-s0/summary.json: completion tokens over calls, 9 to 54
round-0 answers each), Qwen2.5-Coder-1.5B-Instruct at max_tokens 1024. Instruction-tuned 3B-8B models write
answers of a similar order; measure yours on a first slice (``--limit 10``) and pass ``--answer-tokens``."""
OTHER_ANSWER_TOKENS = round(sum(ANSWER_TOKENS.values()) / len(ANSWER_TOKENS))
"""A benchmark of one's own: the mean over the six."""
DEFAULT_THROUGHPUT = 1000.0
"""Generated tokens per second, all requests in flight together: an assumption for one GPU serving a 3B-8B
model with vLLM at this grid's concurrency, not a measurement. Measure yours (completion tokens over wall
time of a first slice) and pass ``--throughput``."""
CRITIC_TOKENS = {False: 1, True: 8}
"""Tokens a critic call generates, by verbal confidence (``engine/confidence.critic_request``)."""


@dataclass(frozen=True)
class CellCost:
    """One cell's estimate: its questions and per-question calls (None, with ``problem``, where they cannot
    be known yet: an optimised graph not made), and the tokens assumed per call."""

    at: Position
    questions: int
    calls: Calls | None
    problem: str
    answer_tokens: int
    critic_tokens: int

    def total_calls(self) -> tuple[int, int]:
        calls = self.calls or Calls((0, 0))
        return tuple(self.questions * (a + c) for a, c in zip(calls.answers, calls.critics))  # type: ignore

    def tokens(self) -> tuple[int, int]:
        calls = self.calls or Calls((0, 0))
        return tuple(self.questions * (a * self.answer_tokens + c * self.critic_tokens)  # type: ignore
                     for a, c in zip(calls.answers, calls.critics))


@dataclass(frozen=True)
class Plan:
    """A grid's estimate: every cell, the round-0 answers the cache serves twice, and the assumptions."""

    cells: tuple[CellCost, ...]
    shared_answers: int
    """Round-0 answers counted in more than one cell that the cache generates once."""
    shared_tokens: int
    throughput: float
    answer_tokens: int | None
    """The tokens of an answer call given for every benchmark (``--answer-tokens``), or None: ``ANSWER_TOKENS``."""
    notes: tuple[str, ...]
    """Questions counted at a limit because the data is not here."""


def estimate(cfg: ExperimentConfig, throughput: float = DEFAULT_THROUGHPUT,
             answer_tokens: int | None = None) -> Plan:
    """The estimate of ``cfg``'s grid (module docstring); ``answer_tokens`` replaces ``ANSWER_TOKENS``."""
    if not (math.isfinite(throughput) and throughput > 0):
        raise DelibError(f"throughput must be generated tokens per second above 0, got {throughput}")
    if answer_tokens is not None and answer_tokens < 1:
        raise DelibError(f"answer tokens must be at least 1, got {answer_tokens}")
    counted = {bench: question_count(cfg, bench) for bench in cfg.benchmarks}
    cells = tuple(_cost(at, counted[at.benchmark][0], answer_tokens) for at in positions(cfg))
    answers, tokens = _shared(cells)
    return Plan(cells, answers, tokens, throughput, answer_tokens,
                tuple(note for _, note in counted.values() if note))


def question_count(cfg: ExperimentConfig, bench: str) -> tuple[int, str]:
    """The questions each cell of ``bench`` runs, and a note where the count is the limit, not the data's."""
    limit = cfg.limits[bench]
    try:
        with _offline():
            return len(load_selected(benchmarks.get(bench), cfg.splits[bench], limit,
                                     cfg.selections.get(bench, Selection()), cfg.data_dir)), ""
    except DelibError as err:
        if limit is None:
            raise DelibError(f"--plan counts {bench}'s questions from the data here and found none ({err}); "
                             f"give {bench} a limit in the file, or get its data") from err
        return limit, f"{bench}: no data here, counted at its limit {limit}"


@contextmanager
def _offline() -> Iterator[None]:
    """The HF hub switched off (``benchmarks/helpers/sources``): a plan reads only what is here."""
    before = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["HF_HUB_OFFLINE"]
        else:
            os.environ["HF_HUB_OFFLINE"] = before


def _cost(at: Position, questions: int, answer_tokens: int | None) -> CellCost:
    engine = at.arm.engine
    method = methods.get(at.arm.method)
    cfg = MethodConfig(benchmark=at.benchmark, engine=engine, **at.method_options())
    try:
        calls, problem = method.call_bounds(cfg), ""
    except DelibError as err:
        calls, problem = None, str(err)
    assumed = answer_tokens or ANSWER_TOKENS.get(at.benchmark, OTHER_ANSWER_TOKENS)
    return CellCost(at, questions, calls, problem, min(assumed, engine.max_tokens),
                    CRITIC_TOKENS[engine.verbal_confidence])


def _shared(cells: Sequence[CellCost]) -> tuple[int, int]:
    """Round-0 answers (and their tokens) counted in several cells that the cache generates once: per
    backbone, benchmark, seed and sampling settings, every loop method's round-0 answers but the most any of
    them draws. A method's round-0 answers are its least answer calls, at most its agents."""
    drawn: dict[tuple, list[int]] = defaultdict(list)
    length: dict[tuple, int] = {}
    for cell in cells:
        method = methods.get(cell.at.arm.method)
        if cell.calls is None or not method.tree_requests:
            continue
        engine = method.engine(cell.at.arm.engine)
        key = (cell.at.backbone.label, cell.at.benchmark, cell.at.seed, engine.temperature, engine.max_tokens,
               engine.prompts)
        drawn[key].append(min(cell.calls.answers[0], engine.agents) * cell.questions)
        length[key] = cell.answer_tokens
    saved = {key: sum(group) - max(group) for key, group in drawn.items()}
    return sum(saved.values()), sum(n * length[key] for key, n in saved.items())


def lines(plan: Plan, source: str) -> list[str]:
    """The plan as ``delib experiment --plan`` prints it: a row per cell, a total per backbone, the grid's
    total after the shared round-0 answers, the cells not counted and the assumptions."""
    cells = plan.cells
    axes = [len({key(c) for c in cells}) for key in (lambda c: c.at.backbone.label, lambda c: c.at.benchmark,
                                                       lambda c: c.at.arm.label, lambda c: c.at.seed)]
    out = [f"{source}: {len(cells)} cells = {axes[0]} backbone(s) x {axes[1]} benchmark(s) x {axes[2]} method(s) "
           f"x {axes[3]} seed(s); nothing runs, no server is asked",
           f"{'backbone':<14}{'benchmark':<11}{'method':<22}{'seed':>4}{'questions':>10}  {'calls/question':<16}"
           f"{'LLM calls':<16}{'generated tokens':<18}hours"]
    backbones = list(dict.fromkeys(c.at.backbone.label for c in cells))
    for label in backbones:
        mine = [c for c in cells if c.at.backbone.label == label]
        out += [_row(c, plan.throughput) for c in mine]
        if len(backbones) > 1:  # round-0 answers are shared within a backbone only: its subtotal counts them all
            out.append(f"{label} subtotal, before the shared round-0 answers: {_totals(mine, plan.throughput)}")
    shared = (f", counting once the {_n(plan.shared_answers)} round-0 answers ({_n(plan.shared_tokens)} tokens) "
              "that several methods ask for and the response cache generates once") if plan.shared_answers else ""
    out.append(f"grid total: {_totals(cells, plan.throughput, plan.shared_answers, plan.shared_tokens)}{shared}")
    return out + _not_counted(cells) + [f"note: {note}" for note in plan.notes] + _assumptions(plan)


def _row(cell: CellCost, throughput: float) -> str:
    at = cell.at
    head = f"{at.backbone.label or '-':<14}{at.benchmark:<11}{at.arm.label:<22}{at.seed:>4}{cell.questions:>10}  "
    if cell.calls is None:
        return head + "not counted: " + cell.problem.split(";")[0]
    per = tuple(a + c for a, c in zip(cell.calls.answers, cell.calls.critics))
    tokens = cell.tokens()
    return (head + f"{_span(per, str):<16}{_span(cell.total_calls(), _n):<16}{_span(tokens, _n):<18}"
            f"{_span(tokens, lambda t: _hours(t, throughput))}")


def _totals(cells: Sequence[CellCost], throughput: float, shared_answers: int = 0, shared_tokens: int = 0) -> str:
    calls = [sum(c.total_calls()[i] for c in cells) - shared_answers for i in (0, 1)]
    tokens = [sum(c.tokens()[i] for c in cells) - shared_tokens for i in (0, 1)]
    return (f"{_span(tuple(calls), _n)} LLM calls, {_span(tuple(tokens), _n)} generated tokens, "
            f"{_span(tuple(tokens), lambda t: _hours(t, throughput))} hours at {throughput:g} tokens/s")


def _not_counted(cells: Sequence[CellCost]) -> list[str]:
    """One line per reason a cell's calls are not known yet, with the cells it holds back."""
    reasons: dict[str, list[str]] = defaultdict(list)
    for c in cells:
        if c.calls is None:
            reasons[c.problem].append("/".join(filter(None, (c.at.backbone.label, c.at.benchmark, c.at.arm.label))))
    return [f"not counted ({len(names)} cells, e.g. {names[0]}): {problem}" for problem, names in reasons.items()]


def _assumptions(plan: Plan) -> list[str]:
    lengths = ", ".join(dict.fromkeys(f"{c.at.benchmark} {c.answer_tokens}" for c in plan.cells))
    source = ("as --answer-tokens gives" if plan.answer_tokens else "the mean answer of committed qwen2.5-coder-1.5b "
              "runs, docs/results/table1; --answer-tokens N replaces them")
    return [f"assumed: an answer call generates {lengths} tokens ({source}; at most max_tokens), a critic call 1 (8 "
            "when verbal); prompt tokens are not counted",
            f"assumed: {plan.throughput:g} generated tokens/s over all requests in flight (--throughput); calls a-b: "
            "the least and the most, an early stop (consensus, agreeing hints) decides between"]


def _span(pair: tuple[int, ...], show: Callable[[int], str]) -> str:
    return show(pair[0]) if pair[0] == pair[1] else f"{show(pair[0])}-{show(pair[1])}"


def _n(value: float) -> str:
    """A count in k, M or G."""
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:.1f}{unit}"
    return f"{value:.0f}"


def _hours(tokens: float, throughput: float) -> str:
    hours = tokens / throughput / 3600
    return f"{hours:.2f}" if hours < 10 else f"{hours:.0f}"
