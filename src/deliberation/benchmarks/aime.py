"""AIME 2024 (AIME I + II): 30 problems whose answers are integers 0-999.

Data: the 2024 AIME I and II problems and answers (AoPS wiki; HuggingFaceH4/aime_2024 on the hub). The
official answer format is an integer from 000 to 999, so leading zeros carry no meaning ("025" == "25").
The answer is read with the shared numeric parser (``numeric.py``: boxed, then an answer marker, then the
last number) and must be such an integer; anything else is unparseable, hence wrong.
"""

from __future__ import annotations

from fractions import Fraction

from deliberation.benchmarks.helpers import numeric, sources
from deliberation.benchmarks.base import Benchmark
from deliberation.benchmarks.helpers.sources import HubSplit, Row, SplitSources
from deliberation.errors import DelibError
from deliberation.types import Example


def _aime_int(value: Fraction | None) -> str | None:
    """The answer as written canonically (25.0 -> "25"), or None unless it is an integer in 0-999."""
    if value is None or value.denominator != 1 or not 0 <= value <= 999:
        return None
    return str(value.numerator)


def as_aime(answer: object) -> str | None:
    """The canonical AIME answer of a written answer ("025" -> "25"), or None when it is not one."""
    return _aime_int(numeric.parse_exact(str(answer)))


def _gold(row: Row) -> str:
    value = as_aime(row.get("answer"))
    if value is None:
        raise DelibError(f"{row.origin}: AIME answer {row.get('answer')!r} is not an integer 0-999")
    return value


def _from_dir(row: Row) -> Example:
    return Example(id=row.text("id"), question=row.text("question"), answer=_gold(row))


def _from_hub(row: Row) -> Example:
    return Example(id=f"aime24/{row.index}", question=str(row.first("problem", "question")), answer=_gold(row))


SOURCES = {
    "test": SplitSources(
        "aime24/test.jsonl", _from_dir, hub=HubSplit("HuggingFaceH4/aime_2024", None, "train", _from_hub)
    )
}


def extract(text: str) -> str | None:
    """The AIME answer stated in ``text`` ("025" -> "25"), or None when there is no integer 0-999."""
    return _aime_int(numeric.extract_number(text))


class AIME24(Benchmark):
    """AIME 2024 with integer answer checking."""

    name = "aime24"
    splits = tuple(SOURCES)
    answer_instruction = "Reason step by step, then put your final answer (an integer from 0 to 999) in \\boxed{}."

    def load(self, split: str, limit: int | None = None, data_dir: str | None = None) -> list[Example]:
        return sources.load(self.name, split, SOURCES, limit, data_dir)

    def extract(self, text: str) -> str | None:
        return extract(text)

    def score(self, example: Example, text: str) -> bool:
        return extract(text) == example.answer

    def answer_key(self, answer: str) -> str:
        return as_aime(answer) or answer.strip()
