"""``delib aflow-search``: AFlow's search for a workflow (Zhang et al., ICLR 2025, Section 4 and Algorithm 1;
reference code FoundationAgents/AFlow, ``scripts/optimizer.py`` and ``scripts/optimizer_utils/``).

Round 1 is the blank workflow (one Custom call without instruction), scored ``validation_runs`` times on the
validation questions (the training questions given; each run its own seed). Each later round:
1. selection: among round 1 and the ``top_k`` best other rounds by mean score, a parent drawn with AFlow's
   soft mixed probability, mix / n + (1 - mix) * softmax(alpha * (100 s_i - 100 s_max)) (its code's alpha 0.2,
   mix 0.3; the paper's text gives 0.4 and 0.2);
2. expansion: the optimiser model (its own backend) sees the parent, its score, its earlier modifications with
   their scores, three questions it got wrong and the operators, and writes one modification; a draft that is
   not a valid workflow, or repeats an earlier modification of that parent, is asked again (3 tries);
3. evaluation: the child scored ``validation_runs`` times;
4. backpropagation: its modification, score and whether it beat its parent join the parent's experience.
It stops after ``search_rounds`` rounds, or when the mean of the top three round scores has not changed for
``patience`` rounds (AFlow's convergence check), and writes the best round's workflow to ``OUT/workflow.json``
with every round, the settings, the validation question ids and the tokens of executor and optimiser. A round
whose optimiser wrote no valid new workflow has no child: it is noted on stderr and listed, with why, under the
record's ``failed_rounds``; when no round after the first has one, the search is refused and nothing written
(the blank workflow is no search result: the optimiser's model or server is likely wrong; a file an older
version wrote so is refused where it is read, ``protocols.workflow.load_searched``). Asked
again over its finished workflow.json, it does nothing with the same settings (``SEARCH_RESUME``) and refuses
other ones (``outputs.resume.finished_already``): a workflow runs used is never overwritten.

Departures: workflows are JSON over the operators (``protocols/workflow.py``), not Python code (no
model-written code runs outside the sandbox); defaults are the paper's (20 rounds, 5 validation runs, top 3,
patience 5) except where the machine needs fewer (say so with the flags).
"""

from __future__ import annotations

import json
import logging
import re
from contextlib import closing
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from deliberation import benchmarks
from deliberation.backends import MissingOptions
from deliberation.backends.concurrent import in_order
from deliberation.benchmarks.answers import make_backend
from deliberation.benchmarks.sandbox.isolation import require_isolation
from deliberation.benchmarks.selection import load_selected
from deliberation.config import EngineConfig, LearningWorkload
from deliberation.engine.loop import example_rng, make_context, request_seed
from deliberation.engine.spec import MethodSpec
from deliberation.errors import DelibError, require_at_least, require_number
from deliberation.files import setting_up, write_json_atomic
from deliberation.outputs.resume import BACKEND_OPTIONS, ResumeRule, finished_already
from deliberation.rl.graph_optimize import Optimised, job_cache
from deliberation.protocols.workflow import (WORKFLOW_FILE, WORKFLOW_FORMAT, Workflow, load_searched, parse,
                                            workflow_episode)
from deliberation.types import Episode, Example, GenerationRequest, Message, Purpose, RequestKind

BLANK = {"steps": [{"op": "custom", "out": "answer", "instruction": "", "input": ["$problem"]}], "answer": ["answer"]}
OPERATORS = ("custom: n calls on its instruction followed by its input (texts; \"$problem\" is the question, "
             "\"$name\" a variable); out holds the reply (a list when n > 1).\n"
             "sc_ensemble: from some variables' solutions, the one whose answer is most frequent.\n"
             "programmer: writes and runs Python code that computes the answer, given the variable analysis; "
             "out holds the code's result.")
_TAG = re.compile(r"<(modification|workflow)>(.*?)</\1>", re.DOTALL)
TRIES = 3
"""Drafts asked of the optimiser per round before the round is given up."""
LOG = logging.getLogger("deliberation")


@dataclass(frozen=True)
class AFlowSearch(LearningWorkload):
    """What ``delib aflow-search`` searches with and on."""

    learns = ("search on the questions the workflow is measured on", "search")

    optimizer_backend: str = "openai"
    """The backend of the optimiser model (any OpenAI-compatible server: openai with --optimizer-opt base_url=...)."""
    optimizer_options: dict[str, Any] = field(default_factory=dict)
    """Its options (``--optimizer-model`` sets model)."""
    search_rounds: int = 20
    """At most this many rounds of the search, round 1 included (the paper's 20)."""
    validation_runs: int = 5
    """Scorings of each workflow on the validation questions (the paper's 5)."""
    top_k: int = 3
    """Parents are drawn among round 1 and this many best other rounds (AFlow's top-k)."""
    patience: int = 5
    """Stop when the mean of the top ``top_k`` round scores is unchanged for this many rounds."""
    alpha: float = 0.2
    """The softmax's sharpness on scores in percent (AFlow's code: 0.2)."""
    mix: float = 0.3
    """The uniform share of the selection (AFlow's code: 0.3)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("search_rounds", "validation_runs", "top_k", "patience"):
            require_at_least(f"--{name.replace('_', '-')}", getattr(self, name))
        require_number("--alpha", self.alpha, 0, 100)
        require_number("--mix", self.mix, 0, 1)


@dataclass
class Round:
    number: int
    parent: int | None
    workflow: Workflow
    modification: str
    scores: list[float]
    failures: list[dict[str, str]] = field(default_factory=list)

    @property
    def mean(self) -> float:
        return float(np.mean(self.scores))


def candidates(rounds: Sequence[Round], spec: AFlowSearch) -> tuple[list[Round], np.ndarray]:
    """Round 1 and the ``top_k`` best other rounds, and AFlow's soft mixed probability of each."""
    found = [rounds[0], *sorted(rounds[1:], key=lambda r: -r.mean)[: spec.top_k]]
    scores = np.array([100 * r.mean for r in found])
    soft = np.exp(spec.alpha * (scores - scores.max()))
    return found, spec.mix / len(found) + (1 - spec.mix) * soft / soft.sum()


def select(rounds: Sequence[Round], spec: AFlowSearch, rng: np.random.Generator) -> Round:
    """The parent, drawn among ``candidates``."""
    found, probs = candidates(rounds, spec)
    return found[int(rng.choice(len(found), p=probs / probs.sum()))]


def search(spec: AFlowSearch, out: str, progress: bool = True) -> Optimised:
    """Search (see the module docstring) behind a bar of its rounds, into ``out``/workflow.json."""
    bench = benchmarks.get(spec.benchmark)
    examples = load_selected(bench, spec.split, spec.limit, spec.selection, spec.data_dir)
    require_isolation()  # a drafted workflow may hold a Programmer: refused now, not at its first program
    folder = Path(out)
    asked = spec.record(VERSION, [e.id for e in examples])
    if finished_already(folder / WORKFLOW_FILE, "a workflow", _recorded, asked, SEARCH_RESUME, "search"):
        return Optimised(folder / WORKFLOW_FILE, True)
    cache = job_cache(spec.cache, folder)
    tokens = {"executor": [0, 0], "optimizer": [0, 0]}
    with setting_up(folder):
        executor, optimizer = _backends(spec, cache)
    with closing(executor), closing(optimizer):
        rounds, failed = _search(spec, examples, bench, executor, optimizer, tokens, progress)
    if len(rounds) == 1 and failed:
        raise DelibError(f"the optimiser wrote no valid new workflow in any of rounds 2-{failed[-1]['round']} ("
                         f"round 2: {failed[0]['why']}); nothing written: check --optimizer-model and its server, "
                         "whose replies are in the response cache")
    best = max(rounds, key=lambda r: (r.mean, -r.number))
    record = {**asked, "best_round": best.number, "tokens": tokens,
              "rounds": [{"round": r.number, "parent": r.parent, "modification": r.modification, "mean": r.mean,
                          "scores": r.scores, "workflow": r.workflow.to_json()} for r in rounds],
              "failed_rounds": failed}
    write_json_atomic(folder / WORKFLOW_FILE, {"format": WORKFLOW_FORMAT, "workflow": best.workflow.to_json(),
                                                "record": record})
    return Optimised(folder / WORKFLOW_FILE, False)


VERSION = 1
"""The search's version in workflow.json: raised by a change to what it finds from the same settings (the
selection, the optimiser's prompt, the operators), so that a workflow searched before is refused, not reused."""
SEARCH_RESUME = ResumeRule(
    compared=("version", "settings", "engine", "questions"), added_later={"version": 1},
    nested={"settings": ResumeRule(may_change=AFlowSearch.unlearned,
                                   nested={"backend_options": BACKEND_OPTIONS, "optimizer_options": BACKEND_OPTIONS}),
            "engine": ResumeRule()})
"""When a workflow.json answers a search asked again: the same version, settings, engine and validation
questions (the workload's ``unlearned`` and the backends' threads may differ: they change how fast or where,
not what is found)."""


def _recorded(path: Path) -> dict[str, Any]:
    """The record of the workflow file at ``path`` (refused in one line when it is none)."""
    load_searched(str(path))
    return json.loads(path.read_text())["record"]


def _backends(spec: AFlowSearch, cache: str | None) -> tuple[Any, Any]:
    """(executor, optimiser), both on the response cache ``cache``; the executor closed again when the
    optimiser is refused."""
    executor = make_backend(spec.backend, cache=cache, **spec.backend_options)
    try:
        return executor, make_backend(spec.optimizer_backend, cache=cache, **spec.optimizer_options)
    except MissingOptions as err:
        executor.close()
        raise MissingOptions(err.backend, err.options, "the optimiser's ", role="optimizer") from err
    except BaseException:
        executor.close()
        raise


def _search(spec: AFlowSearch, examples: list[Example], bench: Any, executor: Any, optimizer: Any,
            tokens: dict[str, list[int]], progress: bool = False) -> tuple[list[Round], list[dict[str, Any]]]:
    """Every round with a child, behind a bar showing the best validation score so far (it stops short of the
    last round when the top scores stand still for ``patience`` rounds), and the rounds without one (their
    number, parent and why)."""
    from tqdm import tqdm

    rng = np.random.default_rng(spec.engine.seed)
    rounds = [Round(1, None, parse(BLANK), "", [])]
    experience: dict[int, list[dict]] = {1: []}
    failed: list[dict[str, Any]] = []
    with tqdm(total=spec.search_rounds, disable=not progress, unit="round", desc="aflow",
              dynamic_ncols=True) as bar:
        _evaluate(rounds[0], spec, examples, bench, executor, tokens)
        tops = [_top(rounds, spec)]
        bar.set_postfix(best=f"{rounds[0].mean:.3f}")
        bar.update()
        for number in range(2, spec.search_rounds + 1):
            grown = _grow(rounds, experience, number, spec, examples, bench, executor, optimizer, tokens, rng)
            if isinstance(grown, dict):
                failed.append(grown)
                LOG.warning("delib: note: aflow round %d has no child: %s", number, grown["why"])
            else:
                tops.append(_top(rounds, spec))
                bar.set_postfix(best=f"{max(r.mean for r in rounds):.3f}")
            bar.update()
            if grown is None and len(tops) > spec.patience and len(set(tops[-spec.patience - 1:])) == 1:
                break
    return rounds, failed


def _grow(rounds: list[Round], experience: dict[int, list[dict]], number: int, spec: AFlowSearch,
          examples: list[Example], bench: Any, executor: Any, optimizer: Any, tokens: dict[str, list[int]],
          rng: np.random.Generator) -> dict[str, Any] | None:
    """Round ``number``: select a parent, have the optimiser modify it and score the child (appended to
    ``rounds``, its outcome to the parent's experience); when the optimiser wrote no valid new workflow, the
    round's failure (its number, parent and why) instead."""
    parent = select(rounds, spec, rng)
    drafted = _expand(parent, experience[parent.number], spec, examples, optimizer, tokens, number)
    if isinstance(drafted, str):
        return {"round": number, "parent": parent.number, "why": drafted}
    child = Round(number, parent.number, drafted[1], drafted[0], [])
    _evaluate(child, spec, examples, bench, executor, tokens)
    rounds.append(child)
    experience[number] = []
    experience[parent.number].append({"modification": child.modification, "score": child.mean,
                                      "succeeded": child.mean > parent.mean})
    return None


def _top(rounds: Sequence[Round], spec: AFlowSearch) -> float:
    return round(float(np.mean(sorted(r.mean for r in rounds)[-spec.top_k:])), 9)


def _evaluate(node: Round, spec: AFlowSearch, examples: list[Example], bench: Any, executor: Any,
              tokens: dict[str, list[int]]) -> None:
    """Score ``node``'s workflow ``validation_runs`` times (run j with seed + j), ``--concurrency`` questions in
    flight with their requests batched; keep up to 3 failures (the first in question order)."""
    for run in range(spec.validation_runs):
        engine = replace(spec.engine, seed=spec.engine.seed + run)
        played = in_order(partial(_play, node, engine, bench), examples, executor, spec.concurrency)
        right = 0
        for example, (question, episode) in zip(examples, played):
            right += episode.correct
            tokens["executor"][0] += episode.prompt_tokens
            tokens["executor"][1] += episode.completion_tokens
            if not episode.correct and len(node.failures) < 3:
                node.failures.append({"question": question, "right_answer": example.answer,
                                      "output": str(episode.final_answer)})
        node.scores.append(right / len(examples))


def _play(node: Round, engine: EngineConfig, bench: Any, example: Example, executor: Any) -> tuple[str, Episode]:
    """(question as asked, episode) of one validation question under ``node``'s workflow."""
    ctx = make_context(example, executor, bench, engine, MethodSpec("aflow", None, protocol=node.workflow))
    return ctx.question, workflow_episode(ctx, example_rng(engine.seed, example.id))


def _expand(parent: Round, experience: list[dict], spec: AFlowSearch, examples: list[Example], optimizer: Any,
            tokens: dict[str, list[int]], number: int) -> tuple[str, Workflow] | str:
    """One modification of ``parent`` by the optimiser (``TRIES`` tries), or why none was: each draft's fault."""
    tried = {e["modification"] for e in experience}
    faults = []
    for attempt in range(TRIES):
        request = GenerationRequest((Message("user", _prompt(parent, experience)),), max_tokens=2048,
                                    temperature=1.0,
                                    seed=request_seed(spec.engine.seed, f"aflow-round-{number}", 0, attempt),
                                    purpose=Purpose(RequestKind.ANSWER, examples[0].id,
                                                    benchmarks.get(spec.benchmark).format_question(examples[0]), 0))
        [reply] = optimizer.generate([request])
        tokens["optimizer"][0] += reply.prompt_tokens
        tokens["optimizer"][1] += reply.completion_tokens
        drafted = _draft(reply.text, tried)
        if isinstance(drafted, tuple):
            return drafted
        faults.append(drafted)
    return f"{TRIES} drafts, none usable ({'; '.join(dict.fromkeys(faults))})"


def _draft(text: str, tried: set[str]) -> tuple[str, Workflow] | str:
    """(modification, workflow) of one optimiser reply, or what is wrong with it."""
    found = dict(_TAG.findall(text))
    if "workflow" not in found:
        return "no <workflow>...</workflow>"
    try:
        workflow = parse(json.loads(found["workflow"]))
    except (ValueError, TypeError) as err:
        return f"not a valid workflow: {str(err)[:120]}"
    modification = found.get("modification", "").strip()
    if not modification:
        return "no <modification>...</modification>"
    if modification in tried:
        return "a modification tried before on that parent"
    return modification, workflow


def _prompt(parent: Round, experience: list[dict]) -> str:
    """The optimiser's prompt (AFlow's WORKFLOW_OPTIMIZE_PROMPT, paraphrased)."""
    done = "\n".join(f"- {e['modification']} (score {e['score']:.3f}; {'better' if e['succeeded'] else 'not better'}"
                     "): do not repeat it" for e in experience) or "- none yet"
    wrong = "\n\n".join(f"Question: {f['question']}\nRight answer: {f['right_answer']}\nWorkflow's answer: "
                        f"{f['output']}" for f in parent.failures) or "none"
    return (f"You improve a workflow that solves math problems. This workflow scores {parent.mean:.3f} on the "
            f"validation questions:\n<workflow>{json.dumps(parent.workflow.to_json())}</workflow>\n\n"
            f"Its operators:\n{OPERATORS}\n\nModifications of it tried before:\n{done}\n\nQuestions it got wrong:\n"
            f"{wrong}\n\nMake ONE modification that may raise the score (add an operator, change an instruction, "
            "ensemble, review and revise...), at most about five steps changed, twelve calls in all. Reply with "
            "<modification>one sentence</modification> and <workflow>the whole new workflow as JSON</workflow>.")
