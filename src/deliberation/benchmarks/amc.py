"""AMC 12 2023 (AMC23): 40 competition problems with numeric answers, as in the Qwen2.5-Math evaluation.

Data: the 2023 AMC 12A/12B problems (AoPS wiki), answers rewritten as the number the correct choice stands
for (a few are negative). Answers are checked as exact numbers with the GSM8K normalization of
``numeric.py`` (boxed, then an answer marker, then the last number; ``$``, units and thousands commas
ignored; fractions equal their decimals), the convention of Qwen2.5-Math's ``math_eval`` for AMC23.
"""

from __future__ import annotations

from deliberation.benchmarks.helpers import numeric
from deliberation.benchmarks.base import NumericBenchmark
from deliberation.benchmarks.helpers.sources import HubSplit, Row, SplitSources
from deliberation.types import Example


def _from_dir(row: Row) -> Example:
    answer = numeric.numeric_key(row.text("answer"))
    return Example(id=row.text("id"), question=row.text("question"), answer=answer)


def _from_hub(row: Row) -> Example:
    answer = numeric.numeric_key(str(row.get("answer")))
    return Example(id=f"amc23/{row.index}", question=str(row.first("question", "problem")), answer=answer)


SOURCES = {
    "test": SplitSources("amc23/test.jsonl", _from_dir, hub=HubSplit("math-ai/amc23", None, "test", _from_hub))
}


class AMC23(NumericBenchmark):
    """AMC23 with numeric answer checking."""

    name = "amc23"
    sources = SOURCES
    splits = tuple(SOURCES)
