"""Deliberation on one question with no gold answer: ``deliberation.deliberate`` and ``delib ask``.

The question becomes an example of the benchmark ``ask:<answer type>`` (``benchmarks/own.py``): the answer
type gives the answer instruction, the extraction and the agreement keys (numeric, math, choice, code, or
text: a normalized final line, see ``benchmarks/text.py`` for its limits). The episode is the one
``run_method`` computes, so a method behaves here as in ``delib run``; there is nothing to score, so the
episode's ``correct`` fields are always False.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from deliberation import benchmarks, methods
from deliberation.backends import check_options, context_window
from deliberation.backends.base import Backend
from deliberation.benchmarks.answers import make_backend
from deliberation.benchmarks.own import ask_name, asked_example
from deliberation.config import EngineConfig
from deliberation.engine.team_checks import check_context
from deliberation.errors import DelibError
from deliberation.methods import run_method
from deliberation.runs.runner import RunSpec, method_entry
from deliberation.actions import Action
from deliberation.types import Episode, Turn

VERBS = {None: "answered", Action.PERSIST: "persisted", Action.REFINE: "refined", Action.CONCEDE: "conceded",
         Action.RESAMPLE: "resampled"}


@dataclass(frozen=True)
class DeliberationResult:
    """What a team made of one question."""

    question: str
    answer: str | None
    """The team's answer as its winning agent wrote it (a number, a letter, a program, a final line); None
    when no agent's answer could be read."""
    response: str
    """The winning agent's whole final response."""
    episode: Episode
    """Every turn: agent, round, action (None at round 0), answer key, confidence, tokens, LLM calls."""
    method: str
    answer_type: str

    @property
    def prompt_tokens(self) -> int:
        return self.episode.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        return self.episode.completion_tokens

    @property
    def llm_calls(self) -> int:
        return self.episode.llm_calls


def deliberate(question: str, method: str = "mpdf", *, model: str | None = None, backend: str | Backend = "llamacpp",
               answer_type: str = "numeric", choices: Sequence[str] = (), agents: int | None = None,
               rounds: int | None = None, seed: int | None = None, engine: EngineConfig | None = None,
               cache: str | None = None, backend_options: Mapping[str, Any] | None = None,
               **method_options: Any) -> DeliberationResult:
    """Let a team of ``agents`` deliberate on ``question`` with ``method`` for up to ``rounds`` rounds.

    ``backend`` is a backend name (built with ``model``, ``backend_options`` and the response ``cache``, and
    closed afterwards) or a backend object the caller owns. ``agents``, ``rounds`` and ``seed`` override
    ``engine`` (default ``EngineConfig()``). ``choices`` lists the options of a ``choice`` question (or write
    them in the question). ``method_options``: method options by name, as in ``delib run`` (the fields of
    ``MethodOptions``, methods/options.py: ``policy=``, ...).
    """
    if methods.get(method).hindsight:
        raise DelibError(f"{method} picks the right answer in hindsight, and a question asked alone has none to "
                         "check; ask with another method, or run it on a benchmark with `delib run`")
    bench = ask_name(answer_type)
    example = asked_example(question, answer_type, choices)
    config = _engine(engine, agents, rounds, seed)
    spec = RunSpec(method=method, benchmark=bench, engine=config, **method_options)
    prompt = benchmarks.get(bench).format_question(example)
    built, owned = _backend(backend, model, cache, backend_options, spec, prompt)
    try:
        episode = run_method(method, example, built, bench, config, **method_options)
    finally:
        if owned:
            built.close()
    text = winning_text(episode)
    answer = benchmarks.get(bench).extract_for(example, text) if episode.final_answer is not None else None
    return DeliberationResult(question, answer, text, episode, method, answer_type)


def _engine(engine: EngineConfig | None, agents: int | None, rounds: int | None, seed: int | None) -> EngineConfig:
    given = {"agents": agents, "rounds": rounds, "seed": seed}
    return replace(engine or EngineConfig(), **{k: v for k, v in given.items() if v is not None})


def _backend(backend: str | Backend, model: str | None, cache: str | None, options: Mapping[str, Any] | None,
             spec: RunSpec, prompt: str) -> tuple[Backend, bool]:
    """The backend to use and whether this call built it (and so closes it). One to build is checked first,
    before any model loads: the method and its options, the backend's options, and that ``prompt`` (the
    question as the agents read it) fits its context window."""
    method = method_entry(spec)
    if not isinstance(backend, str):
        return backend, False
    opts = {**(options or {}), **({"model": model} if model is not None else {})}
    if backend == "scripted":  # the simulator answers the questions of the one benchmark it is given
        opts.setdefault("benchmark", spec.benchmark)
    check_options(backend, opts)  # before the window, which reads n_ctx
    check_context(spec.method, method.engine(spec.engine), {"the question": prompt}, context_window(backend, opts),
                  method.shown(spec.method_config()))
    return make_backend(backend, cache=cache, **opts), True


def final_turns(episode: Episode) -> list[Turn]:
    """Each agent's last turn (its final response), in agent order."""
    last: dict[int, Turn] = {}
    for turn in episode.turns:
        last[turn.agent] = turn
    return [last[a] for a in sorted(last)]


def winning_text(episode: Episode) -> str:
    """The final response of the first agent holding the team's answer (what the vote returns)."""
    finals = final_turns(episode)
    return next((t.text for t in finals if t.answer == episode.final_answer), finals[0].text)


def trace(episode: Episode) -> list[str]:
    """One line per round: what each agent did, with its answer and confidence."""
    rounds = sorted({t.round for t in episode.turns})
    return [f"round {r}: " + "; ".join(_did(t) for t in episode.turns if t.round == r) for r in rounds]


def _did(turn: Turn) -> str:
    answer = "no answer" if turn.answer is None else _short(turn.answer)
    confidence = "" if turn.confidence is None else f", confidence {turn.confidence:.2f}"
    return f"agent {turn.agent} {VERBS[turn.action]} {answer}{confidence}"


def _short(answer: str, width: int = 40) -> str:
    flat = " ".join(answer.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."
