"""LLM backends behind one batch-first protocol, and the registry ``BACKENDS``.

Adding a backend is one file plus one line here: a class with the members of ``base.Backend``, and any of
its optional ones (``base.Capabilities``, ``base.cache_scope_of``, ``base.interrupt``). A class is checked
when it is looked up, a backend when it is made (``base.check_class``, ``base.check_backend``). Heavy
libraries are imported lazily inside each backend, so importing this package is cheap.
"""

from __future__ import annotations

import inspect
import math
import typing
from typing import Any, Callable, Sequence

from deliberation.backends.cache import CACHE_FILE
from deliberation.backends.base import Backend, Capabilities, capabilities, check_backend, check_class
from deliberation.errors import DelibError, writable_file
from deliberation.registry import Registry
from deliberation.types import AnswerKeyFactory

# name -> "module:Class"; resolved on use so no heavy import happens at registry time.
BACKENDS: Registry[type] = Registry("backend", {
    "llamacpp": "deliberation.backends.llamacpp:LlamaCppBackend",
    "openai": "deliberation.backends.openai_http:OpenAIBackend",
    "hf": "deliberation.backends.hf:HFBackend",
    "vllm": "deliberation.backends.vllm:VLLMBackend",
    "scripted": "deliberation.backends.scripted:ScriptedBackend",
    "team": "deliberation.backends.team:TeamBackend",  # each agent on its own model (--team)
})


def backend_class(name: str) -> type:
    """The class registered under ``name``, checked to have a backend's members (``base.check_class``)."""
    return check_class(BACKENDS.resolve(name), name)


def backend_capabilities(name: str) -> Capabilities:
    """The optional class members of the backend ``name``, each its own or the default (``base.Capabilities``)."""
    return capabilities(backend_class(name))


class MissingOptions(DelibError):
    """A backend asked for without options its constructor needs (``where``: what asked, e.g. ``team agent 0:
    ``; ``role``: whose options they are, "" for the run's backend, "optimizer" for AFlow's optimiser, whose
    flags carry its name). ``str()`` names them as options; a front end may name them its own way (``worded``:
    the CLI's flags)."""

    def __init__(self, backend: str, options: Sequence[str], where: str = "", role: str = "") -> None:
        self.backend, self.options, self.where, self.role = backend, tuple(options), where, role
        super().__init__(self.worded(lambda option: f"option {option}"))

    def worded(self, word: Callable[[str], str]) -> str:
        """The message with each missing option as ``word`` names it."""
        return f"{self.where}backend {self.backend!r} needs {' and '.join(map(word, self.options))}"


HANDED = ("answers",)
"""Constructor arguments that whoever builds a backend hands in, never options a user sets: ``answers``, the
answer key a simulator answers from (``types.AnswerKeyFactory``; the scripted backend, and a team passes it on)."""


def backend_options(name: str) -> dict[str, inspect.Parameter]:
    """The options a user may set on the backend ``name``: its constructor's parameters, less ``HANDED``."""
    params = inspect.signature(backend_class(name)).parameters
    return {p: spec for p, spec in params.items() if p not in HANDED}


def make_backend(name: str, cache: str | None = None, answers: AnswerKeyFactory | None = None,
                 **options: Any) -> Backend:
    """Build the backend ``name`` with ``options``; wrap it in the SQLite response cache at ``cache`` (a
    backend that ``caches_itself``, a team, gets the path instead: each of its members has its own scope).
    ``answers`` goes to a backend that takes it (``HANDED``) and is dropped for the others. A user's
    ``answers`` option is refused (``check_options``) before anything is built."""
    if cache is not None:
        writable_file(cache, "cache", CACHE_FILE)
    check_options(name, options)
    cls = backend_class(name)
    params = inspect.signature(cls).parameters
    handed = {"answers": answers} if "answers" in params else {}
    if capabilities(cls).caches_itself:
        return check_backend(cls(**options, **handed, cache=cache), name)
    backend = check_backend(cls(**options, **handed), name)
    if cache is None:
        return backend
    from deliberation.backends.cache import CachedBackend

    return CachedBackend(backend, cache)


def check_options(name: str, options: dict[str, Any]) -> None:
    """Refuse options the backend ``name``'s constructor does not take, or lacks ones it needs (e.g. openai
    without a model or a base URL), before anything is built or written; then the class's own checks (a
    ``validate_options``: a team checks every member)."""
    cls = backend_class(name)
    params = backend_options(name)
    needed = [p for p, spec in params.items() if spec.default is inspect.Parameter.empty
              and spec.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    missing = [p for p in needed if p not in options]
    if missing:
        raise MissingOptions(name, missing)
    unknown = sorted(set(options) - set(params))
    if unknown and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        raise DelibError(f"backend {name!r} takes no option {', '.join(unknown)}; its options: {', '.join(params)}")
    _check_types(name, options)
    capabilities(cls).validate_options(**options)


KIND_WORDS = {int: "an integer", float: "a finite number", bool: "true or false", str: "text"}


def option_kinds(name: str) -> dict[str, tuple[type, bool]]:
    """The backend ``name``'s options of a plain declared type: option -> (int, float, bool or str, whether
    None is allowed). Options of other types (a scripted backend's skills, vllm's engine keywords) are left
    out: they are the backend's to check."""
    hints = typing.get_type_hints(backend_class(name).__init__)
    kinds = {}
    for option, hint in hints.items():
        args = typing.get_args(hint)
        plain = [a for a in args if a is not type(None)] if type(None) in args else [hint]
        if len(plain) == 1 and plain[0] in KIND_WORDS:
            kinds[option] = (plain[0], type(None) in args)
    return kinds


def _check_types(name: str, options: dict[str, Any]) -> None:
    """Refuse an option whose value is not of the type the constructor declares (``timeout_s=abc``), naming
    the type and the default; a float option also refuses NaN and infinity."""
    params = inspect.signature(backend_class(name)).parameters
    for option, (kind, optional) in option_kinds(name).items():
        if option in options and not _fits(options[option], kind, optional):
            default = params[option].default
            shown = "" if default is inspect.Parameter.empty else f" (default {default})"
            raise DelibError(f"backend {name!r} option {option} takes {KIND_WORDS[kind]}{' or none' * optional}"
                             f"{shown}, got {options[option]!r}")


def _fits(value: Any, kind: type, optional: bool) -> bool:
    if value is None or isinstance(value, bool):  # bool is an int in Python, but n_ctx=true is a mistake
        return (value is None and optional) or (value is not None and kind is bool)
    if kind is float:
        return isinstance(value, (int, float)) and math.isfinite(value)
    return isinstance(value, kind)


def context_window(name: str, options: dict[str, Any]) -> int | None:
    """The tokens one sequence may hold on the backend ``name`` built with ``options``, when the backend knows
    it before loading anything (``Capabilities.context_window``: llamacpp's ``n_ctx``); None for backends whose
    window the server or the model decides."""
    return backend_capabilities(name).context_window(**options)


def records_summaries(name: str, options: dict[str, Any]) -> bool:
    """Whether every completion of the backend ``name`` built with ``options`` carries a log-probability summary
    (``Capabilities.records_summaries``), known before anything loads."""
    return backend_capabilities(name).records_summaries(**options)


def team_size(name: str, options: dict[str, Any]) -> int | None:
    """The agents the backend ``name`` built with ``options`` has a model for (``Capabilities.team_size``: a
    mixed team's one model per agent); None for a backend that serves any number of agents."""
    return backend_capabilities(name).team_size(**options)


__all__ = ["BACKENDS", "HANDED", "Backend", "MissingOptions", "backend_capabilities", "backend_class",
           "backend_options", "check_options", "context_window", "make_backend", "option_kinds", "records_summaries",
           "team_size"]
