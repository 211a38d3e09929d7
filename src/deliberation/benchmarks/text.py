"""Free-text answers: the scorer of the ``text`` answer type (own JSONL data and ``delib ask``), no dataset.

A response's answer is its last ``\\boxed{}``, else the line after its last answer marker ("Answer:",
"Final answer:", "the answer is"), else its last non-empty line, outside fenced code. Answers agree (vote
together, and match a gold answer) when their normalized forms are equal: case folded, markdown emphasis,
punctuation and a leading article removed, whitespace collapsed, so "**Paris.**" and "paris" agree.

Limits, by design (no model judges equivalence): paraphrases do not agree ("Paris" and "the capital is
Paris", "4" and "four"), a final line that restates reasoning instead of the answer splits the vote, and a
gold answer must be written as short as the answers it should match. Prefer ``numeric``, ``math`` or
``choice`` where the answer has such a form.
"""

from __future__ import annotations

import re

from deliberation.benchmarks.base import Benchmark
from deliberation.benchmarks.helpers import numeric
from deliberation.errors import DelibError
from deliberation.types import Example

_MARKER = re.compile(r"(?i)\bfinal\s+answer\b\s*(?:is\b|:)|\banswer\b\s*(?:is\b|:)")
_ARTICLE = re.compile(r"^(?:the|a|an) ")


def extract(text: str) -> str | None:
    """The final answer span of ``text`` (boxed, else after the last marker, else the last line), or None."""
    prose = numeric.strip_code(text).replace("**", "")
    boxed = numeric.last_boxed(prose)
    if boxed is not None:
        return _answer(boxed)
    markers = list(_MARKER.finditer(prose))
    tail = prose[markers[-1].end():] if markers else prose
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return _answer((lines[0] if markers else lines[-1]) if lines else "")


def _answer(span: str) -> str | None:
    """``span`` stripped, or None when nothing of it survives ``normalize`` (only punctuation)."""
    return span.strip() if normalize(span) else None


def normalize(answer: str) -> str:
    """The agreement key: case folded, punctuation and a leading article dropped, whitespace collapsed."""
    words = " ".join(re.sub(r"[\W_]+", " ", answer.casefold()).split())
    return _ARTICLE.sub("", words)


class TextAnswers(Benchmark):
    """Short free-text answers compared after ``normalize`` (see the module docstring for its limits)."""

    name = "text"
    answer_instruction = "Reason step by step, then give your final answer alone on the last line, after 'Answer:'."

    def load(self, split: str, limit: int | None = None, data_dir: str | None = None) -> list[Example]:
        raise DelibError("text is an answer type, not a benchmark: pass a JSONL file with --answer-type text")

    def extract(self, text: str) -> str | None:
        return extract(text)

    def score(self, example: Example, text: str) -> bool:
        answer = extract(text)
        return answer is not None and normalize(answer) == normalize(example.answer) != ""

    def answer_key(self, answer: str) -> str:
        return normalize(answer)
