"""The shared vocabulary: frozen dataclasses that cross module boundaries.

No dicts cross module boundaries (docs/design.md, section Shared records); every record here round-trips
through JSON with ``to_json`` / ``from_json`` so run directories and rollout files can be read back into the
same types.
Writing those files is ``deliberation.files``' work.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Protocol

from deliberation.actions import Action
from deliberation.errors import DelibError, check_json_text


class RequestKind(str, enum.Enum):
    """What a request asks: recorded on its ``Purpose``, its prompt and its tree-store node."""

    ANSWER = "answer"  # round 0, a further sample, a RESAMPLE
    UPDATE = "update"  # a REFINE turn of any update style
    CRITIC = "critic"  # the introspective-confidence probe


_ADDED_LATER_KEY = "added_later"
ADDED_LATER = {_ADDED_LATER_KEY: True}
"""Field metadata of an optional field added after files of its record were written (see ``to_json``)."""
_FORMERLY_KEY = "formerly"


def formerly(name: str) -> dict[str, str]:
    """Field metadata of a field renamed after files of its record were written: files keep ``name`` as its key
    (their format, and every file already written, unchanged; ``key``), and a flag or TOML key of the former
    name is refused with a line naming the new one (``cli.flags``, ``runs.experiment_file``)."""
    return {_FORMERLY_KEY: name}


def key(f: dataclasses.Field) -> str:
    """The key of field ``f`` in files: its name, or the name it had when its files were first written."""
    return f.metadata.get(_FORMERLY_KEY, f.name)


def formerly_named(f: dataclasses.Field) -> str | None:
    """The name field ``f`` had before it was renamed (None: never renamed)."""
    return f.metadata.get(_FORMERLY_KEY)


def renamed(cls: type) -> dict[str, str]:
    """Former name to name of each renamed field of the dataclass ``cls`` (``formerly``): its key in files to
    the name its flag and code use."""
    return {f.metadata[_FORMERLY_KEY]: f.name for f in dataclasses.fields(cls) if _FORMERLY_KEY in f.metadata}


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: str
    content: str


@dataclass(frozen=True)
class Purpose:
    """What a request is for, as data beside its messages: set by the engine where it builds the request, read
    by the tree store and the scripted simulator, so no reader parses prompt text and a new prompt style
    changes no reader. ``kind``: what it asks (``RequestKind``); ``round``: the deliberation round it is made
    in; ``own`` (update, critic) and ``peers`` (update): the solutions it shows, as shown (a prompt set may
    clip them). Its agent is the request's."""

    kind: RequestKind
    example_id: str
    question: str  # as the agents are shown it
    round: int
    own: str = ""
    peers: tuple[str, ...] = ()


@dataclass(frozen=True)
class GenerationRequest:
    """What a backend is asked to generate. ``seed`` makes sampling reproducible per request."""

    messages: tuple[Message, ...]
    max_tokens: int = 512
    temperature: float = 0.7
    seed: int = 0
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    top_logprobs: int = 0
    agent: int | None = None
    """The agent the request is for (the engine fills it in; None: no agent in particular). A team backend
    (backends/team.py) sends it to that agent's model. Not part of the response-cache key
    (``backends.cache.request_key``): the same request to the same model is the same answer, whichever
    agent asks, so caches written before the field existed stay valid."""
    purpose: Purpose | None = None
    """What the request is for (the engine fills it in; None: a request the engine did not build). Not part
    of the response-cache key either: it describes the messages, it does not change them."""


def purpose_of(request: GenerationRequest, reader: str) -> Purpose:
    """``request.purpose``; a one-line DelibError naming ``reader`` for a request the engine did not build."""
    if request.purpose is None:
        raise DelibError(f"{reader}: the request says not what it is for (GenerationRequest.purpose); only "
                         "requests the engine builds can be answered here")
    return request.purpose


@dataclass(frozen=True)
class TokenLogprob:
    """Log-probability of one generated token, with the ``top`` alternatives (token, logprob)."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class LogprobSummary:
    """What a completion's own token log-probabilities say about it, recorded by backends that have the
    logits anyway so that log-probability confidence can be computed at replay time without regenerating
    (tree stores). Natural-log probabilities of the sampled tokens under the raw logits (before
    temperature). ``backends/logprob_summary.py`` makes and reads them."""

    mean: float
    """Mean log-probability of the generated tokens."""
    lowest_window: float
    """Lowest mean over any ``WINDOW`` consecutive tokens (the whole completion when shorter): the weakest
    stretch of the reasoning (DeepConf's lowest group confidence, Fu et al. 2025)."""
    tail: tuple[float, ...]
    """Log-probabilities of the last ``TAIL`` tokens, in order: the final answer's tokens are among them."""
    tail_bounds: tuple[int, ...]
    """Character offsets in the decoded text bounding the ``tail`` tokens (one more than ``tail``): token k
    of the tail spells text[tail_bounds[k]:tail_bounds[k + 1]]."""


@dataclass(frozen=True)
class Completion:
    """A backend's answer to one GenerationRequest. Token counts are always filled in."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    logprobs: tuple[TokenLogprob, ...] | None = None
    finish_reason: str = "stop"
    latency_s: float = 0.0
    """Seconds from the start of the backend call that produced it until it was done, so the slowest
    completion of a batch gives the batch's time (a cached completion keeps its original value)."""
    cached: bool = False
    summary: LogprobSummary | None = None
    """The log-probability summary where the backend gives one (llamacpp, vllm, hf, openai with summaries); None
    (absent, not zero) where it does not, and in caches and stores written before it existed."""


@dataclass(frozen=True)
class Example:
    """One benchmark item. MMLU: ``choices`` holds the options, ``answer`` the letter. HumanEval:
    ``question`` is the prompt, ``answer`` the canonical solution, ``meta`` holds test and entry_point."""

    id: str
    question: str
    answer: str
    choices: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Keyed:
    """A question as an answer key holds it (``AnswerKey``): its example, gold included, how an answer to it
    is scored, and whether answers to it are code (HumanEval, your own code questions) or a boxed value.
    Passed between modules only, never written: it holds a function, so it has no JSON form."""

    example: Example
    score: Callable[[Example, str], bool]
    code: bool = False


class AnswerKey(Protocol):
    """The golds a simulator answers from: ``find`` the question a request shows its agents. The benchmarks
    layer builds them (``benchmarks/answers.py``) and whoever builds a backend hands one to it, so the backends
    layer, an LLM client layer, knows no dataset."""

    def find(self, question: str) -> Keyed: ...


AnswerKeyFactory = Callable[[Optional[str], Optional[str]], AnswerKey]
"""Builds the answer key of a benchmark (None: any) read from a data folder (None: the usual sources):
``(benchmark, data_dir) -> AnswerKey``."""


@dataclass(frozen=True)
class Turn:
    """One agent's response in one round. Round 0 is the independent answer (``action`` None)."""

    agent: int
    round: int
    action: Action | None
    answer: str | None
    text: str
    confidence: float | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    cached: bool = False
    correct: bool = False


@dataclass(frozen=True)
class Episode:
    """One method run on one example: every turn, the team's answer and whether it is right."""

    example_id: str
    method: str
    final_answer: str | None
    correct: bool
    turns: tuple[Turn, ...]
    rounds_run: int = 0
    wall_seconds: float = 0.0
    generation_seconds: float = 0.0
    """Sum over the episode's LLM batches of the time each took when generated (from the completions'
    latencies, cached ones included): what the episode costs without a cache, comparable across methods
    that share cached requests. Backends that do not time requests (scripted) give 0."""
    capped: bool | None = field(default=None, metadata=ADDED_LATER)
    """Whether the method's cap ended the episode before its own stopping rule held (PHP: ``--php-max-calls``
    reached with its last two answers differing); None (and not written) for a method without such a cap."""

    @property
    def prompt_tokens(self) -> int:
        return sum(t.prompt_tokens for t in self.turns)

    @property
    def completion_tokens(self) -> int:
        return sum(t.completion_tokens for t in self.turns)

    @property
    def llm_calls(self) -> int:
        return sum(t.llm_calls for t in self.turns)


@dataclass(frozen=True)
class Decision:
    """One meta-decision recorded for training: observation features, action, behaviour log-prob,
    counterfactual rewards of every action (indexed like ``ACTIONS``) and the token cost (of the action
    taken; ``refine_tokens``: what REFINE costs here whichever action was taken, its call and its critic
    call; None in rollouts recorded before it was)."""

    example_id: str
    sample: int
    """Which of the decision point's K joint actions (``delib collect --joint-actions``) this one belongs to."""
    round: int
    agent: int
    own: tuple[float, ...]
    peers: tuple[tuple[float, ...], ...]
    action: Action
    logprob: float
    rewards: tuple[float, ...]
    """Counterfactual reward of each action of the decision's action set (``action_set(len(rewards))``)."""
    r_local: float
    r_global: float
    token_cost: float = 0.0
    refine_tokens: float | None = None
    resample_tokens: float | None = field(default=None, metadata=ADDED_LATER)
    """What RESAMPLE costs here (its call and its critic call); None (and not written) outside the
    four-action set, so three-action rollout files keep their format."""


# --- JSON round trip -------------------------------------------------------------------------------


def to_json(obj: Any) -> Any:
    """Convert a record (or nested records, tuples, enums) into plain JSON-able values; a field marked
    ``ADDED_LATER`` is left out while None, so files without it keep their exact format; a renamed field is
    written under its former name (``formerly``)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {key(f): to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if not (f.metadata.get(_ADDED_LATER_KEY) and getattr(obj, f.name) is None)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, (list, tuple)):
        return [to_json(x) for x in obj]
    if isinstance(obj, Mapping):
        return {str(k): to_json(v) for k, v in obj.items()}
    return obj


def from_json(cls: type, data: Any) -> Any:
    """Rebuild ``cls`` from ``to_json`` output, following the type hints (tuples, enums, nested records). JSON of
    another shape (not an object, a field missing, a text where a number belongs) is a TypeError or ValueError
    naming the field, so readers of files refuse it at once instead of failing later, far from the file."""
    if not isinstance(data, Mapping):
        raise TypeError(f"{cls.__name__} record is a JSON {json_type(data)}, not an object")
    hints = typing.get_type_hints(cls)
    missing = [key(f) for f in dataclasses.fields(cls) if key(f) not in data and _required(f)]
    if missing:
        raise ValueError(f"{cls.__name__} record is missing field(s) {', '.join(missing)}")
    return cls(**{f.name: _field(cls, key(f), hints[f.name], data[key(f)]) for f in dataclasses.fields(cls)
                  if key(f) in data})


def _field(cls: type, name: str, tp: Any, value: Any) -> Any:
    try:
        return _coerce(tp, value)
    except (TypeError, ValueError) as err:
        raise type(err)(f"{cls.__name__}.{name}: {err}") from err


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


_SCALARS: dict[Any, tuple[type, ...]] = {str: (str,), int: (int,), float: (int, float), bool: (bool,)}
"""The JSON values a field of each scalar type takes (an int is a float: JSON writes 1.0 as 1 in places)."""


def json_type(value: Any) -> str:
    return {dict: "object", list: "list", str: "text", bool: "boolean", type(None): "null"}.get(
        type(value), "number" if isinstance(value, (int, float)) else type(value).__name__)


def _coerce(tp: Any, value: Any) -> Any:
    """Turn a JSON value into the annotated type ``tp``."""
    if value is None:  # passes for a scalar, as it always did (files already written may hold it); never a record
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            raise TypeError(f"a JSON null where a {tp.__name__} record belongs")
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _coerce(inner[0], value) if len(inner) == 1 else value
    if tp in _SCALARS:
        if not isinstance(value, _SCALARS[tp]):
            raise TypeError(f"a JSON {json_type(value)} where a {tp.__name__} belongs")
        return value
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"a JSON {json_type(value)} where a list belongs")
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(args[0], v) for v in value)
        return tuple(_coerce(a, v) for a, v in zip(args, value))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(value)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return from_json(tp, value)
    return value


def strict_json(data: Any, **options: Any) -> str:
    """``json.dumps`` as every file the project writes uses it: NaN and infinity raise ValueError instead of
    being written as the bare ``NaN`` that strict JSON readers (jq, JavaScript, Go) reject, and a lone
    surrogate is BadText (``errors.parse_json`` would refuse to read it back)."""
    text = json.dumps(data, allow_nan=False, **options)
    check_json_text(text, data)
    return text
