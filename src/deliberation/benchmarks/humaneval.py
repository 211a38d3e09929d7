"""HumanEval (Chen et al. 2021, arXiv 2107.03374): 164 Python functions checked by unit tests.

Data: openai/human-eval (MIT). A response is either the body continuing the prompt (the original
completion format) or a whole function, possibly in a fenced ```python block (what chat models write).
The solution ``prompt + completion`` is loaded by ``sandbox.run_tests`` in a separate, limited, isolated
process; the tests (``test`` and ``check(entry_point)``, with the prompt's helpers) run outside it on the
plain values its function returns, so the program cannot forge its verdict (human-eval's ``execution.py``
runs them inside the program's process, where an ``__eq__`` that always says True passes). It is correct
when every assertion passes (pass@1). ``pass_at_k`` is the paper's unbiased estimator. Read sandbox.py for
what the sandbox guarantees and what it does not.

Voting key (``key_for``): execution-based, as in CodeT (Chen et al. 2023, "CodeT: Code Generation with
Generated Tests", ICLR; arXiv 2207.10397) and AlphaCode's behavioural clustering (Li et al. 2022).
Independently sampled programs are almost never textually identical, so a text key makes every vote a
1-1-1 tie. Instead the candidate runs, once, in ``sandbox.py`` (short time limit) on the example calls the
prompt itself shows (``>>> f(...)`` docstring lines and lines starting ``f(...)`` such as
``f("ab") => 3``; only the call is taken, never the stated result), and the key is the tuple of the
results' reprs (sets sorted, memory addresses blanked, each hashed to 16 hex digits); a call that raises
gives ``!ExceptionName``, one that runs past its time gives ``!timeout``. Programs with the same behaviour
on those inputs then vote together. The hidden tests and the canonical solution are never used. The key is
cached per (prompt, entry point, program). Fallbacks to the whitespace-normalised program text: a prompt
without usable example calls, a program that fails to load (syntax error, exception at import), a
sandbox that reports nothing. An unextractable program stays unparseable (the engine never keys it).
Timeouts depend on machine load, so a program near the per-call limit may key differently across runs.
The engine keys a response through ``key_for(example, text)``, which gives the key the prompt.
"""

from __future__ import annotations

import ast
import functools
import re
import secrets
import textwrap
from collections.abc import Sequence
from pathlib import Path

from deliberation.benchmarks.helpers import numeric, sources
from deliberation.benchmarks.sandbox import run as sandbox
from deliberation.benchmarks.base import Benchmark
from deliberation.benchmarks.helpers.sources import HubSplit, Row, SplitSources
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


def _solution(prompt: str, entry: str, completion: str) -> str:
    """The prompt (its imports and helpers) and the completion: a whole function replaces the prompt's
    stub, a body continues it."""
    whole = textwrap.dedent(completion)
    is_function = re.search(rf"^def\s+{re.escape(entry)}\s*\(", whole, re.M) is not None
    return f"{prompt}\n{whole}" if is_function else prompt + completion


def solution(example: Example, completion: str) -> str:
    """The program run in the sandbox: the prompt and the completion (``_solution``)."""
    return _solution(example.question, str(example.meta["entry_point"]), completion)


def checks(example: Example) -> sandbox.Checks:
    """The trusted tests: the prompt (for helpers its test calls, e.g. ``poly``), the test, ``check``."""
    entry = str(example.meta["entry_point"])
    return sandbox.Checks(setup=example.question, code=f"{example.meta['test']}\n\ncheck({entry})\n", entry=entry)


# --- the execution-based voting key (CodeT-style) ---------------------------------------------------------

KEY_PER_CALL_S = 1.0  # time of one example call
KEY_LOAD_S = 2.0  # time to load the program (its imports and top-level code)
KEY_MAX_CALLS = 20
KEY_LIMITS_MEMORY_MB = 512

# Run in the sandbox: load the candidate in its own namespace, evaluate each example call under an alarm,
# write one tagged line per call to fd 1 (the program's own prints go to /dev/null).
_KEY_HARNESS = """
import hashlib, os, random, re, signal, sys

_SRC = {src!r}
_CALLS = {calls!r}
_TAG = {tag!r}


class _Timeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _emit(text):
    os.write(1, (_TAG + " " + text + "\\n").encode())


def _canon(v, depth=0):
    kind = type(v)
    if depth > 50:
        return "..."
    if kind in (set, frozenset):
        return kind.__name__ + "{{" + ", ".join(sorted(_canon(x, depth + 1) for x in v)) + "}}"
    if kind is list:
        return "[" + ", ".join(_canon(x, depth + 1) for x in v) + "]"
    if kind is tuple:
        return "(" + ", ".join(_canon(x, depth + 1) for x in v) + ",)"
    if kind is dict:
        return "{{" + ", ".join(_canon(k, depth + 1) + ": " + _canon(x, depth + 1) for k, x in v.items()) + "}}"
    return re.sub(r" at 0x[0-9a-fA-F]+", " at 0x?", repr(v))


def _main():
    random.seed(0)
    signal.signal(signal.SIGALRM, _alarm)
    sys.stdout = sys.stderr = open(os.devnull, "w")
    ns = {{"__name__": "__candidate__"}}
    try:
        signal.setitimer(signal.ITIMER_REAL, {load_s!r})
        exec(compile(_SRC, "<candidate>", "exec"), ns)
        signal.setitimer(signal.ITIMER_REAL, 0)
    except BaseException as error:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _emit("load !" + type(error).__name__)
        return
    _emit("load ok")
    for i, call in enumerate(_CALLS):
        try:
            signal.setitimer(signal.ITIMER_REAL, {per_call_s!r})
            out = "=" + hashlib.sha256(_canon(eval(call, ns)).encode()).hexdigest()[:16]
        except _Timeout:
            out = "!timeout"
        except BaseException as error:
            out = "!" + type(error).__name__
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        _emit(str(i) + " " + out)


try:
    _main()
except _Timeout:
    pass
"""


def text_key(code: str) -> str:
    """The whitespace-normalised program text."""
    return "\n".join(line.rstrip() for line in code.strip().splitlines())


def _call_end(line: str, start: int) -> int | None:
    """Index just past the parenthesis closing the one at ``start`` (quotes respected), else None."""
    depth, quote, i = 0, "", start
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def example_calls(prompt: str, entry_point: str) -> tuple[str, ...]:
    """The calls of ``entry_point`` the prompt shows as examples, in order and without repeats: lines
    ``>>> f(...)`` or starting ``f(...)`` (``f(x) => y``, ``f(x) == y``, ``f(x) -> y``). Only calls whose
    arguments are literals count; the results the prompt states are ignored."""
    calls: list[str] = []
    for raw in prompt.splitlines():
        line = raw.strip()
        line = line[3:].strip() if line.startswith(">>>") else line
        if not line.startswith(entry_point):
            continue
        paren = len(entry_point)
        while paren < len(line) and line[paren] == " ":
            paren += 1
        end = _call_end(line, paren) if paren < len(line) and line[paren] == "(" else None
        if end is None:
            continue
        call = line[:end]
        try:
            tree = ast.parse(call, mode="eval").body
            if not (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id == entry_point):
                continue
            for arg in [*tree.args, *(k.value for k in tree.keywords)]:
                ast.literal_eval(arg)
        except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
            continue
        if call not in calls:
            calls.append(call)
    return tuple(calls[:KEY_MAX_CALLS])


def key_program(solution: str, calls: Sequence[str], tag: str) -> str:
    """The source run in the sandbox to key ``solution`` on ``calls`` (no tests, no ``check``)."""
    return _KEY_HARNESS.format(src=solution, calls=tuple(calls), tag=tag, load_s=KEY_LOAD_S,
                               per_call_s=KEY_PER_CALL_S)  # fmt: skip


@functools.lru_cache(maxsize=8192)
def execution_key(prompt: str, entry_point: str, code: str) -> str:
    """The behaviour of ``code`` on the prompt's example calls (see the module docstring); the text key
    when there are no example calls or the program does not load."""
    calls = example_calls(prompt, entry_point)
    if not calls:
        return text_key(code)
    tag = "@key-" + secrets.token_hex(8)
    limits = sandbox.Limits(timeout_s=KEY_LOAD_S + KEY_PER_CALL_S * len(calls) + 1.0,
                            memory_mb=KEY_LIMITS_MEMORY_MB)  # fmt: skip
    result = sandbox.run_program(key_program(_solution(prompt, entry_point, code), calls, tag), limits)
    lines = dict(line[len(tag) + 1:].split(" ", 1) for line in result.output.splitlines()
                 if line.startswith(tag + " ") and " " in line[len(tag) + 1:])  # fmt: skip
    if lines.get("load") != "ok":
        return text_key(code)
    missing = "!timeout" if result.status == "timeout" else "!lost"
    return "exec:" + " ".join(lines.get(str(i), missing) for i in range(len(calls)))


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
        jobs = [(solution(examples[i], codes[i] or ""), checks(examples[i])) for i in todo]
        runs = sandbox.run_many_tests(jobs, self.limits, self.workers)
        passed = dict(zip(todo, (r.passed for r in runs)))
        return [passed.get(i, False) for i in range(len(examples))]

    def answer_key(self, answer: str) -> str:
        """The program text, whitespace-normalised (without the example there is nothing to run)."""
        return text_key(answer)

    def key_for(self, example: Example, text: str) -> str | None:
        """Execution-based: the program's behaviour on the prompt's example calls (module docstring)."""
        code = self.extract_for(example, text)
        return None if code is None else execution_key(example.question, str(example.meta["entry_point"]), code)
