"""Exact evaluation of a plain arithmetic expression ("2^10", "1.5 * 10^6", "20 - 2"), and of nothing else.

Models sometimes box the expression that gives their answer instead of its value. This reads such a box
without ``eval``: a small recursive-descent parser over numbers, ``+ - * / ^`` and parentheses, computing
in Fractions so the result compares exactly. Any other text (a letter, two numbers with no operator
between them, a non-integer or huge exponent) is not an expression, hence None.
"""

from __future__ import annotations

import re
from fractions import Fraction

_TOKEN = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+|[-+*/^()])")
MAX_POWER_BITS = 4096  # bound on a power's size, so "10^10^10" is refused rather than computed


class _NotArithmetic(Exception):
    """The text is not an arithmetic expression of numbers."""


def _tokens(text: str) -> list[str] | None:
    found, pos = [], 0
    while pos < len(text.rstrip()):
        match = _TOKEN.match(text, pos)
        if match is None:
            return None
        found.append(match.group(1))
        pos = match.end()
    return found


class _Parser:
    """expr := term (+|- term)*; term := unary (*|/ unary)*; unary := (+|-) unary | power;
    power := atom (^ unary)?; atom := number | ( expr )."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens, self.pos = tokens, 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise _NotArithmetic
        self.pos += 1
        return token

    def expr(self) -> Fraction:
        value = self.term()
        while self.peek() in ("+", "-"):
            value = value + self.term() if self.take() == "+" else value - self.term()
        return value

    def term(self) -> Fraction:
        value = self.unary()
        while self.peek() in ("*", "/"):
            value = value * self.unary() if self.take() == "*" else value / self.unary()
        return value

    def unary(self) -> Fraction:
        if self.peek() in ("+", "-"):
            return self.unary() if self.take() == "+" else -self.unary()
        return self.power()

    def power(self) -> Fraction:
        base = self.atom()
        if self.peek() != "^":
            return base
        self.take()
        return _power(base, self.unary())

    def atom(self) -> Fraction:
        token = self.take()
        if token == "(":
            value = self.expr()
            if self.take() != ")":
                raise _NotArithmetic
            return value
        if token[0].isdigit() or token[0] == ".":
            return Fraction(token)
        raise _NotArithmetic


def _power(base: Fraction, exponent: Fraction) -> Fraction:
    size = max(abs(base.numerator), base.denominator).bit_length()
    if exponent.denominator != 1 or size * abs(exponent.numerator) > MAX_POWER_BITS:
        raise _NotArithmetic
    return base**exponent.numerator


def evaluate(text: str) -> Fraction | None:
    """The exact value of ``text`` when it is an arithmetic expression of numbers, else None."""
    tokens = _tokens(text)
    if not tokens:
        return None
    parser = _Parser(tokens)
    try:
        value = parser.expr()
    except (_NotArithmetic, ZeroDivisionError, RecursionError):
        return None
    return value if parser.peek() is None else None
