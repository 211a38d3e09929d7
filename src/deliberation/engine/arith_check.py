"""Checked arithmetic: every explicit computation in a response's reasoning, re-evaluated exactly.

Small models' wrong answers are largely arithmetic slips inside otherwise sensible reasoning ("48 + 24 =
82"). A written step "lhs = rhs" is checkable when both sides, read as LaTeX-light arithmetic (``\\times``,
``\\div``, ``\\frac{a}{b}``, ``x`` between numbers, thousands separators, ``%``, units in ``\\text{}``
dropped), are exact expressions of numbers (``benchmarks.helpers.arith``) and at least one side has an
operator. Chains "a = b = c" check each adjacent pair. A right side written with d decimals may round the
exact value (half a unit in its last place). Computed from the text alone: no LLM call, so a tree store's
responses give it offline (docs/design.md, section Zero-cost signals).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from deliberation.benchmarks.helpers.arith import evaluate

_REPLACE = (
    (re.compile(r"\\(?:text|mathrm|textbf|mbox)\{[^{}]*\}"), " "),  # units and words
    (re.compile(r"\\[dt]?frac\{([^{}]+)\}\{([^{}]+)\}"), r"((\1)/(\2))"),
    (re.compile(r"\\(?:times|cdot)|×|·|∗"), "*"),
    (re.compile(r"\\div|÷"), "/"),
    (re.compile(r"(?<=\d)\s*[xX]\s*(?=\d)"), "*"),  # "3 x 4"
    (re.compile(r"(?<=\d),(?=\d{3}\b)"), ""),  # 1,000 -> 1000
    (re.compile(r"(\d+(?:\.\d+)?)\s*\\?%"), r"(\1/100)"),
    (re.compile(r"\\[\[\]()]|\\left|\\right|\\,|\\!|\\;|\$|\\approx|≈"), lambda m: "=" if "approx" in m.group(0)
     or m.group(0) == "≈" else " "),
    (re.compile(r"[{}]"), " "),
)
_ARITH = re.compile(r"[\d.+\-*/^()\s]+")
_OPERATOR = re.compile(r"[\d)]\s*[-+*/^]\s*[\d(.]")  # a binary operator between two operands


@dataclass(frozen=True)
class Step:
    """One checked computation: what was written and whether it holds."""

    lhs: str
    rhs: str
    value: Fraction  # the right side's value as written
    holds: bool


def normalize(text: str) -> str:
    """The text with LaTeX-light arithmetic turned into plain ``+ - * / ^ ( )`` over numbers."""
    for pattern, repl in _REPLACE:
        text = pattern.sub(repl, text)
    return text


def steps(text: str) -> list[Step]:
    """Every checkable "lhs = rhs" of ``text``, in order."""
    found: list[Step] = []
    for line in normalize(text).splitlines():
        parts = line.split("=")
        for left, right in zip(parts, parts[1:]):
            step = _check(_tail(left), _head(right))
            if step is not None:
                found.append(step)
    return found


def _tail(segment: str) -> str:
    """The arithmetic expression that ends ``segment`` (what stands left of an '='); empty when it starts
    with an operator, i.e. continues a term that is not a number ("2x + 3", "- 48 + 24" as a bullet)."""
    expr = re.search(r"[\d.+\-*/^()\s]*$", segment).group(0).strip()  # type: ignore[union-attr]
    expr = re.sub(r"^\d+\.\s+", "", expr)  # a numbered list's "1. "
    return "" if expr[:1] in ("+", "-", "*", "/", "^") else _balanced(expr)


def _head(segment: str) -> str:
    """The arithmetic expression that starts ``segment`` (what stands right of an '='); empty when a letter
    continues its last number ("5x")."""
    match = _ARITH.match(segment)
    if match is None or (not match.group(0)[-1].isspace()
                         and re.match(r"[A-Za-z\\]", segment[match.end():match.end() + 1])):
        return ""
    return _balanced(match.group(0).strip().rstrip("."))


def _balanced(expr: str) -> str:
    """``expr`` without unmatched parentheses at its ends (cut from a longer sentence)."""
    while expr.count("(") > expr.count(")") and expr.startswith("("):
        expr = expr[1:].strip()
    while expr.count(")") > expr.count("(") and expr.endswith(")"):
        expr = expr[:-1].strip()
    return expr


def _check(lhs: str, rhs: str) -> Step | None:
    if not lhs or not rhs or not (_OPERATOR.search(lhs) or _OPERATOR.search(rhs)):
        return None
    left, right = evaluate(lhs), evaluate(rhs)
    if left is None or right is None:
        return None
    return Step(lhs, rhs, right, _close(left, right, rhs))


def _close(exact: Fraction, written: Fraction, text: str) -> bool:
    """Equal, or ``text`` is a plain number within half a unit of its last written place of the exact
    value (a rounded "10/3 = 3.33", never "48 + 24 = 73")."""
    plain = re.fullmatch(r"-?\d+(?:\.(\d+))?", text.strip())
    if exact == written or plain is None:
        return exact == written
    return abs(exact - written) <= Fraction(1, 2 * 10 ** len(plain.group(1) or ""))


@dataclass(frozen=True)
class ArithSummary:
    """What checked arithmetic says about one response."""

    checked: int  # steps checked
    wrong: int  # of them, how many do not hold
    answer_follows: bool | None  # the final answer equals the last checked step's result (None: no step)


def summarize(text: str, answer: str | None) -> ArithSummary:
    """Checked-arithmetic summary of ``text`` whose extracted final answer is ``answer``."""
    found = steps(text)
    if not found:
        return ArithSummary(0, 0, None)
    final = evaluate(normalize(answer)) if answer else None
    return ArithSummary(len(found), sum(not s.holds for s in found),
                        final is not None and final == found[-1].value)
