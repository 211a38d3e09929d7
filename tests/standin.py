"""Stand-in GSM8K train questions, for a test session on a clone with no benchmark data folder.

No package ships GSM8K train (``benchmarks/helpers/sources.py``) and the repository holds no benchmark
questions, yet many tests run the machinery (trees, rollouts, training, tuning) on train questions with the
scripted backend, which answers any question it can look up. So on a clone without a data folder,
tests/conftest.py writes these questions into a temporary folder in the data folder's format
(``gsm8k/train.jsonl``: id, question, answer, and a solution ending in ``#### answer``; docs/getting-started.md,
"The data folder format") and points ``$DELIB_DATA_DIR`` at it: the loader tries that folder first and reads
every split it does not hold from the installed packages, as before. A test whose expected values were
computed on the real questions carries ``needs_data_folder`` instead.
"""

from __future__ import annotations

import json
from pathlib import Path

SPLIT = "gsm8k/train"
QUESTIONS = 200
"""More than any test reads: the largest selections are 40 questions, and offsets up to 100."""

_NAMES = ("Ava", "Ben", "Chloe", "Dev", "Emma", "Farid", "Grace")
_ITEMS = ("apples", "marbles", "stickers", "pencils", "books")


def gsm8k_row(index: int) -> dict[str, str]:
    """Train question ``index``: a two-step word problem whose numbers grow with the index (so no two questions
    read the same), with its gold answer and a reference solution ending in GSM8K's ``#### answer`` line."""
    name, item = _NAMES[index % len(_NAMES)], _ITEMS[index % len(_ITEMS)]
    boxes, each, gone = 10 + index, 2 + index % 5, 1 + index % 7
    held, left = boxes * each, boxes * each - gone
    question = (f"{name} has {boxes} boxes of {item} with {each} {item} in each box. {name} gives {gone} {item} "
                f"to a friend. How many {item} does {name} have left?")
    solution = (f"{name} has {boxes} * {each} = <<{boxes}*{each}={held}>>{held} {item}.\n"
                f"After giving {gone} away, {name} has {held} - {gone} = <<{held}-{gone}={left}>>{left} {item} left.\n"
                f"#### {left}")
    return {"id": f"gsm8k/train/{index}", "question": question, "answer": str(left), "solution": solution}


def write(folder: Path) -> Path:
    """Write the stand-in split into ``folder`` (an empty folder) and return the folder."""
    path = folder / f"{SPLIT}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(gsm8k_row(i)) + "\n" for i in range(QUESTIONS)), encoding="utf-8")
    return folder
