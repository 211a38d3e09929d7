"""AFlow workflows as data: steps over AFlow's operators (``protocols/aflow.py``), run on one question.

AFlow (Zhang et al., ICLR 2025) represents a workflow as Python code that an optimiser LLM edits. Here a
workflow is a JSON object the optimiser edits instead, so that no model-written code runs in this process
(the Programmer operator's code runs in the sandbox, as in AFlow); the search over it is AFlow's
(``rl/aflow_search.py``). A workflow:

    {"steps": [{"op": "custom", "out": "solutions", "instruction": "...", "input": ["$problem"], "n": 5},
               {"op": "sc_ensemble", "out": "best", "from": ["solutions"]},
               {"op": "programmer", "out": "result", "analysis": "best"}],
     "answer": ["result", "best"]}

- ``custom``: ``n`` calls on the instruction followed by ``input`` (items joined by newlines; ``$problem`` is
  the question, ``$name`` a variable's text, anything else itself); ``out`` holds the reply, or the list of
  replies when ``n`` > 1;
- ``sc_ensemble``: the solution, among the variables ``from`` (texts or lists, each named once), whose answer
  the model says is most frequent;
- ``programmer``: the output of the model's ``solve()``, given the variable ``analysis`` (or none);
- ``answer``: the first of these variables that is not empty is the team's answer.
At most ``MAX_CALLS`` calls (AFlow bounds a graph's complexity at 10 operators; ``n`` counts each call, a
programmer its most attempts).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from deliberation.engine.loop import AgentRecord, Context, episode_of
from deliberation.config import learned_ids
from deliberation.errors import DelibError, existing, read_object
from deliberation.protocols.aflow import (ATTEMPTS, DETAILED_SOLUTION, GENERATE_SOLUTION, MATH_SOLVE, REFINE_ANSWER,
                                          Calls)
from deliberation.registry import Registry
from deliberation.types import Episode

OPS = ("custom", "sc_ensemble", "programmer")
WORKFLOW_FORMAT = "deliberation-workflow"
"""The format mark of a searched workflow's file (``rl/aflow_search.py`` writes it, ``load_searched`` reads it)."""
WORKFLOW_FILE = "workflow.json"
"""The file `delib aflow-search` writes into its --out."""
MAX_CALLS = 12


@dataclass(frozen=True)
class Step:
    op: str
    out: str
    instruction: str = ""
    input: tuple[str, ...] = ("$problem",)
    n: int = 1
    sources: tuple[str, ...] = ()
    analysis: str = ""


@dataclass(frozen=True)
class Workflow:
    steps: tuple[Step, ...]
    answer: tuple[str, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)

    def ensembled(self) -> list[int]:
        """Per step, the solutions it chooses among: an ensemble all n replies of each source; any other step 0."""
        sizes: dict[str, int] = {}
        chosen = []
        for s in self.steps:
            chosen.append(sum(sizes.get(v, 1) for v in s.sources) if s.op == "sc_ensemble" else 0)
            sizes[s.out] = s.n if s.op == "custom" else 1
        return chosen

    def most_shown(self) -> int:
        """The most solutions one of its prompts shows, whole: a custom step's input variables (a variable of n
        replies shows its first), an ensemble's sources (all n), a programmer's analysis and, on a retry, its
        earlier code."""
        most = 0
        for s, chosen in zip(self.steps, self.ensembled()):
            if s.op == "custom":
                shown = sum(v.startswith("$") and v != "$problem" for v in s.input)
            elif s.op == "sc_ensemble":
                shown = chosen
            else:
                shown = bool(s.analysis) + 1
            most = max(most, shown)
        return most

    @property
    def runs_code(self) -> bool:
        """A Programmer step runs model-written code (in the sandbox)."""
        return any(s.op == "programmer" for s in self.steps)

    def to_json(self) -> dict[str, Any]:
        steps = []
        for s in self.steps:
            step: dict[str, Any] = {"op": s.op, "out": s.out}
            if s.op == "custom":
                step.update(instruction=s.instruction, input=list(s.input), n=s.n)
            elif s.op == "sc_ensemble":
                step["from"] = list(s.sources)
            else:
                step["analysis"] = s.analysis
            steps.append(step)
        return {"steps": steps, "answer": list(self.answer)}


def parse(raw: Any) -> Workflow:
    """The workflow a JSON object describes; ValueError naming the first problem (an optimiser's draft is
    refused by it)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("steps"), list) or not isinstance(raw.get("answer"), list):
        raise ValueError('a workflow is {"steps": [...], "answer": [...]}')
    defined: set[str] = set()
    steps = tuple(_step(s, defined) for s in raw["steps"])
    answer = tuple(str(a) for a in raw["answer"])
    if not answer or any(a not in defined for a in answer):
        raise ValueError(f"answer names {answer}, not all of them defined by a step")
    calls = sum(map(_most_calls, steps))
    if calls > MAX_CALLS:
        raise ValueError(f"the workflow makes {calls} calls, more than {MAX_CALLS}")
    return Workflow(steps, answer)


def _step(raw: Any, defined: set[str]) -> Step:
    if not isinstance(raw, dict) or raw.get("op") not in OPS or not isinstance(raw.get("out"), str):
        raise ValueError(f"a step needs an op ({', '.join(OPS)}) and an out name; got {json.dumps(raw)[:200]}")
    if not all(isinstance(raw.get(k, []), list) and all(isinstance(x, str) for x in raw.get(k, []))
               for k in ("input", "from")) or not isinstance(raw.get("analysis") or "", str):
        raise ValueError(f"step {raw['out']!r}: input and from are lists of texts, analysis a text")
    refs = [x[1:] for x in raw.get("input", []) if x.startswith("$") and x != "$problem"]
    used = refs + list(raw.get("from", [])) + ([raw["analysis"]] if raw.get("analysis") else [])
    missing = [u for u in used if u not in defined]
    if missing:
        raise ValueError(f"step {raw['out']!r} reads {missing[0]!r} before any step defines it")
    defined.add(raw["out"])
    n = raw.get("n", 1)
    if not isinstance(n, int) or not 1 <= n <= MAX_CALLS:
        raise ValueError(f"step {raw['out']!r}: n must be a whole number from 1 to {MAX_CALLS}")
    if raw["op"] == "sc_ensemble" and (not raw.get("from") or len(set(raw["from"])) < len(raw["from"])):
        raise ValueError(f"step {raw['out']!r}: sc_ensemble needs the variables it chooses from, each once")
    return Step(raw["op"], raw["out"], str(raw.get("instruction", "")), tuple(map(str, raw.get("input", ["$problem"]))),
                n, tuple(map(str, raw.get("from", ()))), str(raw.get("analysis", "")))


def run(workflow: Workflow, calls: Calls) -> str:
    """The workflow's answer text on ``calls``' question."""
    values: dict[str, str | list[str]] = {}
    for step in workflow.steps:
        if step.op == "custom":
            replies = [calls.custom(_input(step.input, values, calls), step.instruction) for _ in range(step.n)]
            values[step.out] = replies if step.n > 1 else replies[0]
        elif step.op == "sc_ensemble":
            values[step.out] = calls.sc_ensemble([t for name in step.sources for t in _texts(values[name])])
        else:
            values[step.out] = calls.programmer(_text(values[step.analysis]) if step.analysis else "None")
    return next((_text(values[a]) for a in workflow.answer if _text(values[a]).strip()), "")


def _most_calls(step: Step) -> int:
    """The most calls ``step`` makes: a custom step its n, a programmer its tries, an ensemble one."""
    return step.n if step.op == "custom" else ATTEMPTS if step.op == "programmer" else 1


def ensemble_calls(workflow: Workflow, calls: int) -> list[tuple[int, int]]:
    """(position among a run's ``calls``, solutions shown) of each ScEnsemble call that can be placed without
    knowing how many tries a Programmer took (1 to ``ATTEMPTS``): those before its first programmer step,
    counted from the start, and those after its last, counted from the end. The transferred workflows' are
    all placed, so their runs' episodes (one turn a call) tell how often the ensemble's reply named no solution."""
    steps = [(s.op, _most_calls(s), shown) for s, shown in zip(workflow.steps, workflow.ensembled())]
    found = set(_placed(steps)) | {(calls - 1 - k, n) for k, n in _placed(steps[::-1])}
    return sorted(found)


def _placed(steps: list[tuple[str, int, int]]) -> list[tuple[int, int]]:
    """(calls before it, solutions shown) of each ensemble among (op, calls, shown) ``steps`` before the first
    programmer."""
    placed, at = [], 0
    for op, size, shown in steps:
        if op == "programmer":
            break
        if op == "sc_ensemble":
            placed.append((at, shown))
        at += size
    return placed


def programmer_calls(workflow: Workflow, calls: int) -> range | None:
    """The positions, among a run's ``calls``, of the tries of the workflow's Programmer, where it has one (the
    transferred workflows do): the calls its other steps do not make. None for no or several programmers."""
    at = [k for k, s in enumerate(workflow.steps) if s.op == "programmer"]
    if len(at) != 1:
        return None
    before, after = (sum(map(_most_calls, part)) for part in (workflow.steps[:at[0]], workflow.steps[at[0] + 1:]))
    return range(before, calls - after)


def _texts(value: str | list[str]) -> list[str]:
    return value if isinstance(value, list) else [value]


def _text(value: str | list[str]) -> str:
    return value[0] if isinstance(value, list) else value


def _input(items: tuple[str, ...], values: dict[str, str | list[str]], calls: Calls) -> str:
    shown = [calls.ctx.question if x == "$problem" else _text(values[x[1:]]) if x.startswith("$") else x for x in items]
    return "\n".join(shown)


SEARCH_FIX = "search one with `delib aflow-search`"


def _searched_file(path: str) -> dict[str, Any]:
    """The JSON object of a `delib aflow-search` file; one line when missing or of another format."""
    raw = read_object(existing(path, "workflow", SEARCH_FIX, inside=WORKFLOW_FILE), SEARCH_FIX)
    if raw.get("format") != WORKFLOW_FORMAT:
        raise DelibError(f"{path} is not a workflow from `delib aflow-search` (its format is not "
                         f"{WORKFLOW_FORMAT!r}); {SEARCH_FIX}")
    return raw


def search_tokens(path: str) -> int | None:
    """The tokens (prompt plus completion, executor and optimiser) a `delib aflow-search` file's search spent;
    None where its record holds none."""
    return _spent(_searched_file(path), path)


def _spent(raw: dict[str, Any], path: str) -> int | None:
    record = raw.get("record")
    if isinstance(record, dict) and "tokens" not in record:
        return None
    try:
        return sum(int(prompt) + int(completion) for prompt, completion in record["tokens"].values())
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise DelibError(f"{path} is a damaged workflow: its record's tokens are not [prompt, completion] pairs of "
                         f"each model; {SEARCH_FIX}") from err


def load_searched(path: str) -> tuple[Workflow, frozenset[str]]:
    """The workflow in a `delib aflow-search` file and the ids it was searched on; one line when missing or
    damaged."""
    raw = _searched_file(path)
    try:
        workflow, ids = parse(raw.get("workflow")), frozenset(learned_ids(raw.get("record")))
    except ValueError as err:
        raise DelibError(f"{path} is a damaged workflow: {err}; {SEARCH_FIX}") from err
    _spent(raw, path)  # a damaged record is refused before a run, not at its end
    if _unsearched(raw["record"]):
        raise DelibError(f"{path} holds no search result: its optimiser wrote no valid workflow after round 1's "
                         f"blank one (check --optimizer-model and its server); {SEARCH_FIX}")
    return workflow, ids


def _unsearched(record: dict[str, Any]) -> bool:
    """Whether a search's ``record`` kept round 1's blank workflow alone when it was asked for more rounds: every
    later round failed. The search refuses to write such a file; an older version wrote it."""
    rounds, settings = record.get("rounds"), record.get("settings")
    return isinstance(rounds, list) and len(rounds) == 1 and isinstance(settings, dict) \
        and isinstance(settings.get("search_rounds"), int) and settings["search_rounds"] > 1


def workflow_episode(ctx: Context, rng: np.random.Generator) -> Episode:
    """The spec's workflow (``ctx.spec.protocol``) on the question; its answer text is the team's answer."""
    start = time.perf_counter()
    calls = Calls(ctx)
    text = run(ctx.spec.protocol, calls)
    return episode_of(ctx, [AgentRecord(text, ctx.bench.key_for(ctx.example, text), None, 0, False)], calls.turns, 0,
                      start)


TRANSFERRED: Registry[Workflow] = Registry("transferred workflow", {
    "gsm8k": parse({"steps": [
        {"op": "custom", "out": "solutions", "instruction": MATH_SOLVE, "input": ["$problem"], "n": 5},
        {"op": "sc_ensemble", "out": "best", "from": ["solutions"]},
        {"op": "programmer", "out": "result", "analysis": "best"}], "answer": ["result", "best"]}),
    "math": parse({"steps": [
        {"op": "programmer", "out": "code_output"},
        {"op": "custom", "out": "refined", "instruction": REFINE_ANSWER,
         "input": ["$problem", "Code output:", "$code_output"]},
        {"op": "custom", "out": "detailed", "instruction": DETAILED_SOLUTION},
        {"op": "custom", "out": "generated", "instruction": GENERATE_SOLUTION, "n": 2},
        {"op": "sc_ensemble", "out": "best", "from": ["refined", "detailed", "generated"]}], "answer": ["best"]}),
})
"""The workflows AFlow found, by the benchmark they were found on. The structure follows the paper's case study
(Section 5.2, Figure 6) for GSM8K and Appendix B for MATH; reconstructions from the authors' result archive
(downloaded by their repository's ``data/download_data.py``) agree with it. AFlow chose them on a validation
fifth of GSM8K's test split and of 617 MATH test problems (its Section 5.1), so a test question may have been
among the questions that chose them. GSM8K: five careful solutions, the most consistent one, a program
computing it; the program's output (after three failed programs its last error, with no code "No code
generated", as the reference's Programmer returns), that solution only when the output is empty. MATH: a
program, its output written up as a boxed solution, a detailed solution and two generated ones; the most
consistent of those four."""
