"""Own data: a JSONL file of questions scored like a built-in benchmark, and questions with no gold answer.

The benchmark name ``<answer type>:<path>`` (``numeric:data/shop.jsonl``; ``delib run --benchmark
data/shop.jsonl --answer-type numeric``) is a JSONL file, one JSON object a line, read as the split
``test``; ``ask:<answer type>`` holds the questions ``delib ask`` and ``deliberate`` pose one at a time
(no gold answer: their ``correct`` is always False). The answer type picks the answer extraction, the
agreement keys and the scorer of a built-in benchmark (``ANSWER_TYPES``), unchanged:

- numeric (GSM8K's): ``answer`` a number ("18", "0.5", "1/2");
- math (MATH's, math-verify): ``answer`` in LaTeX;
- choice (MMLU's): ``choices``, 2 to 4 strings labelled A-D, and ``answer``, a letter, a 0-based index or
  a choice's text;
- code (HumanEval's, run in ``sandbox/run.py``): ``question`` a Python function stub (signature and
  docstring, as HumanEval's prompts), ``tests`` Python run after the solution (asserts calling the
  function, or a HumanEval ``check(candidate)``); ``entry_point`` (default: the last function the stub
  defines) and ``answer`` (a reference solution) optional;
- text (``text.py``: a normalized final line; read its limits): ``answer`` a short text.

Every record needs ``id`` (unique) and ``question``; a record that lacks a field its type needs is a
one-line DelibError naming the file and line.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from deliberation.benchmarks.base import Benchmark
from deliberation.benchmarks.helpers import numeric, sources
from deliberation.benchmarks.helpers.sources import Row
from deliberation.errors import BadText, DelibError, clean_text, existing, repeated
from deliberation.registry import Registry
from deliberation.types import Example

# answer type -> "module:Class" of the benchmark whose extraction, agreement keys and scorer it uses
ANSWER_TYPES: Registry[type[Benchmark]] = Registry("answer type", {
    "numeric": "deliberation.benchmarks.gsm8k:GSM8K",
    "math": "deliberation.benchmarks.math:MATH",
    "choice": "deliberation.benchmarks.mmlu:MMLU",
    "code": "deliberation.benchmarks.humaneval:HumanEval",
    "text": "deliberation.benchmarks.text:TextAnswers",
})
ASK = "ask"
LETTERS = "ABCD"
NEEDS = {"numeric": ("answer",), "math": ("answer",), "choice": ("choices", "answer"), "code": ("tests",),
         "text": ("answer",)}
"""The fields each answer type needs besides id and question."""
_DEF = re.compile(r"^\s*def\s+([A-Za-z_]\w*)\s*\(", re.M)
_OPTION = re.compile(r"(?:^|\s)\(?([A-D])[.):]\s*\S", re.M)
"""An option labelled in a choice question's text: ``A) Mars``, ``(B) Venus``, ``C. Earth``, ``D: Jupiter``."""
_NO_CHECK = "\n\ndef check(candidate):\n    pass  # the asserts above are the tests\n"


@dataclass(frozen=True)
class OwnName:
    """A parsed own-data benchmark name: the answer type and the file (None: asked questions)."""

    answer_type: str
    path: str | None


def parse_name(name: str) -> OwnName | None:
    """``numeric:data/q.jsonl`` -> (numeric, data/q.jsonl); ``ask:text`` -> (text, None); else None."""
    prefix, sep, rest = name.partition(":")
    if sep and prefix == ASK and rest in ANSWER_TYPES:
        return OwnName(rest, None)
    if sep and prefix in ANSWER_TYPES and rest:
        return OwnName(prefix, rest)
    return None


def file_name(answer_type: str, path: str) -> str:
    """The benchmark name of the JSONL file ``path`` scored as ``answer_type``."""
    ANSWER_TYPES.resolve(answer_type)
    return f"{answer_type}:{path}"


def folder_name(name: str) -> str:
    """The folder a benchmark's runs go in: a registered name as it is, a file as ``<answer type>-<stem>``
    (``numeric:data/q.jsonl`` -> ``numeric-q``), so a name with a path makes one folder, not several."""
    parsed = parse_name(name)
    if parsed is None or parsed.path is None:
        return name
    return f"{parsed.answer_type}-{Path(parsed.path).stem}"


def ask_name(answer_type: str) -> str:
    """The benchmark name of questions asked with no gold answer, keyed and extracted as ``answer_type``."""
    ANSWER_TYPES.resolve(answer_type)
    return f"{ASK}:{answer_type}"


def entry_point(code: str) -> str | None:
    """The last function a Python stub defines, or None."""
    names = _DEF.findall(code)
    return names[-1] if names else None


def choice_problem(choices: Sequence[str], one: str = "a choice") -> str | None:
    """What makes a list of options unanswerable, or None: an empty one (``one`` names an option: "a --choice"
    on the command line), or one given twice (its two letters would be one answer, and a right letter could be
    scored wrong)."""
    twice = repeated(choices, str.strip)
    if any(not c.strip() for c in choices):
        return f"{one} is empty"
    return None if twice is None else f"choice {twice!r} is given twice"


def asked_example(question: str, answer_type: str, choices: Sequence[str] = ()) -> Example:
    """A question posed with no gold answer; its id is a hash of it, so reruns share the response cache. An
    empty question, and a choice question with no options (none given, none labelled in it), are refused:
    the agents would answer something nobody asked."""
    if not question.strip():
        raise DelibError('the question is empty; pass it in quotes, e.g. delib ask "What is 17 * 24?"')
    for what, text in (("the question", question), *((f"choice {i}", c) for i, c in enumerate(choices, start=1))):
        try:
            clean_text(text)
        except BadText as err:
            raise DelibError(f"{what} is {err}; pass it as valid Unicode (UTF-8)") from None
    if choices and not (answer_type == "choice" and 2 <= len(choices) <= len(LETTERS)):
        raise DelibError(f"choices go with --answer-type choice, 2 to 4 of them (got {len(choices)} for "
                         f"{answer_type}); or list the options in the question")
    problem = choice_problem(choices, "a --choice")
    if problem is not None:
        raise DelibError(f"{problem}; give each option its text, once")
    if answer_type == "choice" and not choices and len(set(_OPTION.findall(question))) < 2:
        raise DelibError("a choice question needs its options: pass --choice TEXT 2 to 4 times, or label them "
                         "in the question (A) ... B) ...)")
    meta = {"entry_point": entry_point(question) or "", "test": ""} if answer_type == "code" else {}
    digest = hashlib.sha256(question.encode()).hexdigest()[:12]
    return Example(id=f"ask/{digest}", question=question, answer="", choices=tuple(choices), meta=meta)


class OwnData(Benchmark):
    """A JSONL file (or asked questions) scored by the benchmark its answer type names."""

    splits = ("test",)

    def __init__(self, answer_type: str, path: str | None) -> None:
        self.scorer: Benchmark = ANSWER_TYPES.resolve(answer_type)()
        self.answer_type, self.path = answer_type, path
        self.name = ask_name(answer_type) if path is None else file_name(answer_type, path)
        self.answer_instruction = self.scorer.answer_instruction

    def data_file(self, split: str) -> str | None:
        """None: the questions are in the file the benchmark's name gives, not in a data directory."""
        return None

    def load(self, split: str, limit: int | None = None, data_dir: str | None = None) -> list[Example]:
        """The file's records in order (asked questions: none, they come one at a time)."""
        if self.path is None:
            return []
        if split not in self.splits:
            raise DelibError(f"{self.path} is a single split, test: pass --split test (an optimisation on your own "
                             "questions adds --allow-test, and is then measured on other questions)")
        return read_examples(Path(self.path), self.answer_type)[:limit]

    def format_question(self, example: Example) -> str:
        """The scorer's format; a question without what that format lists (choices, a function stub) is
        shown as written, with the answer instruction."""
        bare = (self.answer_type == "choice" and not example.choices) or (
            self.answer_type == "code" and not entry_point(example.question))
        return f"{example.question}\n\n{self.answer_instruction}" if bare else self.scorer.format_question(example)

    def extract(self, text: str) -> str | None:
        return self.scorer.extract(text)

    def extract_for(self, example: Example, text: str) -> str | None:
        return self.scorer.extract_for(example, text)

    def answer_key(self, answer: str) -> str:
        return self.scorer.answer_key(answer)

    def key_for(self, example: Example, text: str) -> str | None:
        return self.scorer.key_for(example, text)

    def score(self, example: Example, text: str) -> bool:
        """The scorer's verdict; False for an asked question, which has no gold answer."""
        return self.path is not None and self.scorer.score(example, text)

    def score_many(self, examples: Sequence[Example], texts: Sequence[str]) -> list[bool]:
        if self.path is None:
            return super().score_many(examples, texts)
        return self.scorer.score_many(examples, texts)

    def close(self) -> None:
        self.scorer.close()


# --- reading a file ---------------------------------------------------------------------------------------


def read_examples(path: Path, answer_type: str) -> list[Example]:
    """Every record of ``path`` as an Example of ``answer_type``; a one-line error names a bad line."""
    existing(path, "benchmark file", "pass the path of a JSONL file of questions")
    convert, examples, seen = CONVERTERS[answer_type], [], {}
    for row in sources.read_jsonl(path):
        example = convert(_Record(row, answer_type))
        if example.id in seen:
            raise DelibError(f"{row.origin}: id {example.id!r} is already used on line {seen[example.id]}; "
                             "give every record its own id")
        seen[example.id] = row.origin.rsplit(":", 1)[-1]
        examples.append(example)
    if not examples:
        raise DelibError(f"{path} holds no question (an empty file?); write one JSON object a line")
    return examples


@dataclass(frozen=True)
class _Record:
    """One line of an own-data file, read with the message its answer type gives for a missing field."""

    row: Row
    answer_type: str

    def get(self, name: str) -> object:
        value = self.row.data.get(name)
        if value is None or isinstance(value, str) and not value.strip():
            needs = ", ".join(("id", "question", *NEEDS[self.answer_type]))
            raise DelibError(f"{self.row.origin}: missing field {name!r} ({self.answer_type} records need {needs})")
        return value

    def text(self, name: str) -> str:
        """The field as text: a string, or a number written as one (an id 7, an answer 18); a list, an object
        or true/false is refused, not shown to the agents as Python would print it."""
        value = self.get(name)
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.fail(f"field {name!r} must be text (or a number), got {type(value).__name__} {value!r}")
        return str(value)

    def fail(self, problem: str) -> DelibError:
        return DelibError(f"{self.row.origin}: {problem}")


def _numeric(rec: _Record) -> Example:
    answer = rec.text("answer")
    if numeric.parse_exact(answer) is None:
        raise rec.fail(f"answer {answer!r} is not a number; use --answer-type math or text for other answers")
    return Example(id=rec.text("id"), question=rec.text("question"), answer=answer)


def _plain(rec: _Record) -> Example:
    return Example(id=rec.text("id"), question=rec.text("question"), answer=rec.text("answer"))


def _choice(rec: _Record) -> Example:
    choices = rec.get("choices")
    if not isinstance(choices, list) or not 2 <= len(choices) <= len(LETTERS):
        raise rec.fail(f"choices must be a list of 2 to {len(LETTERS)} strings (labelled A-D), got {choices!r}")
    if not all(isinstance(c, (str, int, float)) and not isinstance(c, bool) for c in choices):
        raise rec.fail(f"choices must be texts (or numbers), got {choices!r}")
    choices = tuple(str(c) for c in choices)
    problem = choice_problem(choices)
    if problem is not None:
        raise rec.fail(f"{problem}; give each option its text, once")
    return Example(id=rec.text("id"), question=rec.text("question"), answer=_letter(rec, choices), choices=choices)


def _letter(rec: _Record, choices: tuple[str, ...]) -> str:
    """The gold letter of a record whose answer is a letter, a 0-based index or a choice's text."""
    answer = rec.get("answer")
    letters = LETTERS[: len(choices)]
    if isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < len(choices):
        return letters[answer]
    if isinstance(answer, str) and answer.strip().upper() in letters and len(answer.strip()) == 1:
        return answer.strip().upper()
    if answer in choices:
        return letters[choices.index(answer)]
    raise rec.fail(f"answer {answer!r} is not one of the letters {', '.join(letters)}, an index 0-{len(choices) - 1} "
                   "or a choice's text")


def _code(rec: _Record) -> Example:
    question, tests = rec.text("question"), rec.text("tests")
    stub = entry_point(question)
    if stub is None:
        raise rec.fail("the question defines no function; a code question is a Python stub (signature and "
                       "docstring) that the solution completes")
    entry = str(rec.row.data.get("entry_point") or stub)
    test = tests if re.search(r"^def\s+check\s*\(", tests, re.M) else tests + _NO_CHECK
    answer = str(rec.row.data.get("answer") or "")
    return Example(id=rec.text("id"), question=question, answer=answer, meta={"test": test, "entry_point": entry})


CONVERTERS: dict[str, Callable[[_Record], Example]] = {
    "numeric": _numeric, "math": _plain, "choice": _choice, "code": _code, "text": _plain}
