"""Reading a number out of model text: the shared answer parser of GSM8K, AMC and AIME.

The order follows the usual grade-school-math evaluation (the GSM8K paper's ``####`` marker, Minerva's
``\\boxed{}`` / "The final answer is" convention, then lm-evaluation-harness's "last number" fallback):

1. the last ``\\boxed{...}`` (nested braces allowed): the answer is in it, or there is none. The box must
   state one number (units and words around it allowed) or an arithmetic expression of numbers, which is
   evaluated exactly; two numbers ("3 or 4", "3, 4") or anything else is no answer (``boxed_number``);
2. the last explicit marker ("####", "Answer:", "the answer is", "final answer:" or a "Final Answer"
   heading): the first number on the first non-empty line after it;
3. the last number in the text.

Fenced code is replaced first by what it states it prints, because small code models (Qwen2.5-Coder) often
answer with a Python block followed by its output: the numbers inside the code are not answers, the output
is. ``output`` blocks are kept as text; from a code block only its ``# Output: 18`` comments and the lines
after ``>>>`` prompts are kept. Commas in thousands, ``$``, units, ``%`` and trailing periods are ignored, and
``\\frac{1}{2}``, ``1/2`` and ``0.5`` are the same number (compared exactly, as Fractions).
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction

from deliberation.benchmarks.helpers import arith

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
# A fenced block: language tag, body, closing fence (or end of text when the model was cut off).
_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n?(.*?)(?:```|\Z)", re.S)
_OUTPUT_TAGS = frozenset({"", "output", "text", "plaintext", "console", "stdout"})
# A code comment stating what the code prints: "# Output: 18", "# prints 18", "# Result = 18".
_STATED = re.compile(r"#\s*(?:output|result|prints?|returns?|answer)\b\s*(?:is\b)?\s*[:=]?\s*(.+)$", re.I)
# "final answer" counts only when it announces one ("is", ":" or a heading line), not in "to get the final answer".
_MARKER = re.compile(
    r"(?im)####|\bfinal\s+answer\b\s*(?:is\b|:)|^[#*\s]*final\s+answer[*:\s]*$|\banswer\b\s*(?:is\b|:|=)"
)
_FRAC = re.compile(r"\\[dt]?frac\s*\{\s*(-?[\d.,]+)\s*\}\s*\{\s*(-?[\d.,]+)\s*\}|\\[dt]?frac(\d)(\d)")
_TEXT = re.compile(r"\\(?:text|textbf|textrm|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")
# LaTeX thousands separators between digit groups: 1{,}000, 1\,000, 1,\!000, 1\!000, 1\ 000.
_LATEX_THOUSANDS = re.compile(r"(?<=\d)(?:\{,\}|,\\!|\\[,! ])(?=\d{3}(?!\d))")
_LATEX_NOISE = re.compile(r"\\[,!;: ]|\\(?:left|right|quad|qquad)\b|\\\$|\$|\^\s*\{?\\circ\}?|\\%|[{}]")
# A minus sign counts only where it cannot be a subtraction ("5-3" is 5 and 3).
_NUMBER = re.compile(
    r"(?P<sign>(?<![\w)\].])-)?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?:\s*/\s*(?P<den>\d+(?:\.\d+)?))?"
)
# A whole answer: optional unit words around one number ("USD 18", "18 dollars", "50 %").
_WHOLE = re.compile(r"(?:[^\W\d_]+\s+)*" + _NUMBER.pattern + r"\s*%?\s*(?:[^\W\d_]+(?:\s+[^\W\d_]+)*)?")
# What a box may hold: one number with unit text around it ("USD 18", "5 km/h", "50 %"): no other digit, no
# operator or factorial, no LaTeX command left ("\sqrt 2", "2\pi"), and a sign only as part of the number.
_BOX_SINGLE = re.compile(r"[^\d+\-*/^.\\]*" + _NUMBER.pattern + r"[^\d+\-*^!\\]*")
# Two candidate answers in one box ("3 or 4", "3, 4", "x = 3 and x = 4"); "1,000" is one number.
_HEDGE = re.compile(r"(?i)\b(?:or|and)\b|;|,(?!\d{3}(?!\d))")
_OPERATORS = {"\\times": "*", "\\cdot": "*", "\\div": "/", "×": "*", "·": "*", "÷": "/"}
_UNIT_POWER = re.compile(r"(?<=[^\W\d_])\s*\^\s*[23]\b")  # ft^2, m^3
_SPACED_THOUSANDS = re.compile(r"(?<![\d.])\d{1,3}(?: \d{3})+(?![\d.])")  # 1 000 000


def boxed_contents(text: str) -> list[str]:
    """The contents of every ``\\boxed{...}`` / ``\\fbox{...}`` in order, nested braces matched."""
    found = []
    for match in _BOXED.finditer(text):
        depth, start = 1, match.end()
        for i in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                found.append(text[start:i])
                break
    return found


def last_boxed(text: str) -> str | None:
    """The content of the last balanced ``\\boxed{}``, or None."""
    boxes = boxed_contents(text)
    return boxes[-1] if boxes else None


def _outputs(match: re.Match[str]) -> str:
    """What one fenced block shows as output: all of an output block; a code block's stated outputs."""
    if match.group(1).lower() in _OUTPUT_TAGS:
        return match.group(2)
    stated, after_prompt = [], False
    for line in match.group(2).splitlines():
        comment, line = _STATED.search(line), line.strip()
        if comment:
            stated.append(comment.group(1))
        elif after_prompt and line and not line.startswith(("...", ">>>")):
            stated.append(line)
        after_prompt = line.startswith(">>>")
    return "\n".join(stated)


def strip_code(text: str) -> str:
    """``text`` with every fenced block replaced by the output it shows (see ``_outputs``)."""
    return _FENCE.sub(lambda m: "\n" + _outputs(m) + "\n", text)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language tag in lower case, body) of every fenced block, in order."""
    return [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]


def output_blocks(text: str) -> list[str]:
    """The output each fenced block shows (see ``_outputs``), in order, empty ones left out."""
    return [shown for shown in map(_outputs, _FENCE.finditer(text)) if shown.strip()]


def clean_latex(span: str) -> str:
    """Plain text from a LaTeX-ish span: ``\\frac{a}{b}`` -> a/b, ``\\text{x}`` -> x, no $ or braces."""
    span = _FRAC.sub(lambda m: f"{m.group(1) or m.group(3)}/{m.group(2) or m.group(4)}", span)
    span = _TEXT.sub(r" \1 ", span.replace("−", "-"))
    return _LATEX_NOISE.sub(" ", _LATEX_THOUSANDS.sub(",", span))


def _to_fraction(match: re.Match[str]) -> Fraction | None:
    value = Fraction(match.group("num").replace(",", ""))
    if match.group("den") is not None:
        den = Fraction(match.group("den"))
        if den == 0:
            return None
        value /= den
    return -value if match.group("sign") else value


def numbers(span: str) -> list[Fraction]:
    """Every number in a cleaned span, in order; ``a/b`` is one number."""
    return [v for v in (_to_fraction(m) for m in _NUMBER.finditer(span)) if v is not None]


def number_in(span: str) -> Fraction | None:
    """The stated number of a short answer span: after the last '=', the first number."""
    vals = numbers(clean_latex(span).rsplit("=", 1)[-1])
    return vals[0] if vals else None


def _box_text(content: str) -> str:
    """A box's content as plain text for ``boxed_number``: operators as ``* /``, units' powers and the
    degree and currency signs dropped, space-separated digit groups joined."""
    span = clean_latex(content)
    for latex, op in _OPERATORS.items():
        span = span.replace(latex, op)
    span = _UNIT_POWER.sub("", re.sub("[°£€¥]", " ", span))
    return _SPACED_THOUSANDS.sub(lambda m: m.group().replace(" ", ""), span)


def boxed_number(content: str) -> Fraction | None:
    """The number a box states (after its last '='): one number among unit words, else the exact value of
    an arithmetic expression ("2^{10}", "20 - 2"); None for hedges ("3 or 4") and anything else, since
    taking the first of several numbers could score a wrong answer correct."""
    span = _box_text(content)
    if _HEDGE.search(span):
        return None
    stated = span.rsplit("=", 1)[-1].strip().rstrip(".")
    single = _BOX_SINGLE.fullmatch(stated)
    return _to_fraction(single) if single else arith.evaluate(stated)


def _after_marker(text: str) -> Fraction | None:
    markers = list(_MARKER.finditer(text))
    if not markers:
        return None
    lines = [ln for ln in text[markers[-1].end() :].splitlines() if ln.strip()]
    return number_in(lines[0]) if lines else None


def extract_number(text: str) -> Fraction | None:
    """The final numeric answer of a model response (boxed, then marker, then last number), or None."""
    text = strip_code(text)
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed_number(boxed)
    marked = _after_marker(text)
    if marked is not None:
        return marked
    vals = numbers(clean_latex(text))
    return vals[-1] if vals else None


def extract_answer(text: str) -> str | None:
    """The final number stated in ``text`` in canonical form ("$18.00" -> "18"), or None."""
    value = extract_number(text)
    return None if value is None else canonical(value)


def score_answer(gold: str, text: str) -> bool:
    """Whether the number stated in ``text`` equals the number ``gold`` exactly. Unparseable is wrong."""
    value = extract_number(text)
    return value is not None and value == parse_exact(gold)


def parse_exact(answer: str) -> Fraction | None:
    """The number ``answer`` is when it holds one number and at most unit words ("$18.00", "18 dollars")."""
    match = _WHOLE.fullmatch(clean_latex(answer).strip().rstrip(".").strip())
    return _to_fraction(match) if match else None


def canonical(value: Fraction) -> str:
    """A canonical spelling: integers plainly ("18"), terminating decimals as decimals ("0.5"), else "p/q"."""
    if value.denominator == 1:
        return str(value.numerator)
    d = value.denominator
    while d % 2 == 0:
        d //= 2
    while d % 5 == 0:
        d //= 5
    if d != 1:
        return f"{value.numerator}/{value.denominator}"
    return format((Decimal(value.numerator) / Decimal(value.denominator)).normalize(), "f")


def numeric_key(answer: str) -> str:
    """``answer`` in canonical form when it is a number ("18.00" -> "18"), else stripped as is."""
    value = parse_exact(answer)
    return canonical(value) if value is not None else answer.strip()
