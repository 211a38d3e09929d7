"""HumanEval (Chen et al. 2021, arXiv 2107.03374): 164 Python functions checked by unit tests.

Data: openai/human-eval (MIT). A response is either the body continuing the prompt (the original
completion format) or a whole function, possibly in a fenced ```python block (what chat models write).
The program ``prompt + completion + test + check(entry_point)`` is run by ``sandbox.py`` in a separate,
limited process, as in human-eval's ``execution.py``; it is correct when every assertion passes
(pass@1). ``pass_at_k`` is the paper's unbiased estimator. Read sandbox.py's warning before running
model code outside a disposable machine.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Sequence
from pathlib import Path

from deliberation.benchmarks import numeric, sandbox, sources
from deliberation.benchmarks.base import Benchmark
from deliberation.benchmarks.sources import HubSplit, Row, SplitSources
from deliberation.types import Example

HUMAN_EVAL_FILE = "data/HumanEval.jsonl.gz"  # inside the human-eval package
_CODE_TAGS = frozenset({"python", "python3", "py", ""})


def _example(row: Row, id_field: str) -> Example:
    meta = {"test": row.text("test"), "entry_point": row.text("entry_point")}
    solution = row.text("canonical_solution")
    return Example(id=row.text(id_field), question=row.text("prompt"), answer=solution, meta=meta)


def _read_package(folder: Path) -> list[Example] | None:
    path = folder / HUMAN_EVAL_FILE
    return [_example(row, "task_id") for row in sources.read_jsonl(path)] if path.is_file() else None


SOURCES = {
    "test": SplitSources(
        "humaneval/test.jsonl",
        lambda row: _example(row, "id"),
        package="human_eval",
        from_package=_read_package,
        hub=HubSplit("openai/openai_humaneval", None, "test", lambda row: _example(row, "task_id")),
    )
}


def _is_python(code: str) -> bool:
    """Whether ``code`` parses as a module or as a function body (a completion continuing the prompt) and
    does something: a lone word or number of prose is valid Python too."""
    for wrapped in (False, True):
        try:
            tree = ast.parse("def _completion():\n" + code if wrapped else code)
        except (SyntaxError, ValueError):
            continue
        statements = tree.body[0].body if wrapped else tree.body  # type: ignore[attr-defined]
        return not all(
            isinstance(s, ast.Expr) and isinstance(s.value, (ast.Name, ast.Constant))
            for s in statements
        )
    return False


def extract(text: str, entry_point: str | None = None) -> str | None:
    """The program in ``text``: the fenced block defining ``entry_point`` (else the last block with a
    ``def``, else the last block), or the whole text when it is Python; None when there is no code."""
    blocks = [body for tag, body in numeric.fenced_blocks(text) if tag in _CODE_TAGS and body.strip()]
    if not blocks:
        return text if text.strip() and _is_python(text) else None
    pattern = rf"^\s*def\s+{re.escape(entry_point)}\s*\(" if entry_point else r"^\s*def\s"
    defining = [b for b in blocks if re.search(pattern, b, re.M)] or [b for b in blocks if "def " in b]
    return (defining or blocks)[-1]


def program(example: Example, completion: str) -> str:
    """The test program: the prompt (its imports and helpers), the completion (a whole function replaces
    the prompt's stub, a body continues it), the tests and the call of ``check``."""
    entry = str(example.meta["entry_point"])
    whole = textwrap.dedent(completion)
    is_function = re.search(rf"^def\s+{re.escape(entry)}\s*\(", whole, re.M) is not None
    body = f"{example.question}\n{whole}" if is_function else example.question + completion
    return f"{body}\n\n{example.meta['test']}\n\ncheck({entry})\n"


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c pass (Chen et al. 2021, eq. 1):
    1 - C(n-c, k) / C(n, k), computed as a product to stay stable for large n."""
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    miss = 1.0
    for i in range(n - c + 1, n + 1):
        miss *= 1.0 - k / i
    return 1.0 - miss


class HumanEval(Benchmark):
    """HumanEval, scored by running the unit tests in a sandboxed process."""

    name = "humaneval"
    splits = tuple(SOURCES)
    answer_instruction = "Write the complete function (signature included) in one ```python code block."
    limits = sandbox.Limits(timeout_s=10.0)
    workers = 2  # programs run at once in score_many

    def load(self, split: str, limit: int | None = None, data_dir: str | None = None) -> list[Example]:
        return sources.load(self.name, split, SOURCES, limit, data_dir)

    def format_question(self, example: Example) -> str:
        return f"Complete this Python function:\n\n```python\n{example.question}```\n\n{self.answer_instruction}"

    def extract(self, text: str) -> str | None:
        return extract(text)

    def extract_for(self, example: Example, text: str) -> str | None:
        return extract(text, str(example.meta["entry_point"]))

    def score(self, example: Example, text: str) -> bool:
        return self.score_many([example], [text])[0]

    def score_many(self, examples: Sequence[Example], texts: Sequence[str]) -> list[bool]:
        if len(examples) != len(texts):
            raise ValueError(f"score_many got {len(examples)} examples but {len(texts)} texts")
        codes = [self.extract_for(ex, text) for ex, text in zip(examples, texts)]
        todo = [i for i, code in enumerate(codes) if code is not None]
        runs = sandbox.run_many([program(examples[i], codes[i] or "") for i in todo], self.limits, self.workers)
        passed = dict(zip(todo, (r.passed for r in runs)))
        return [passed.get(i, False) for i in range(len(examples))]

    def answer_key(self, answer: str) -> str:
        return "\n".join(line.rstrip() for line in answer.strip().splitlines())
