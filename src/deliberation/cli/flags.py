"""Command-line flags generated from config dataclasses: one source for names, types, defaults and help.

A field ``max_tokens: int = 1024`` with the docstring below it becomes ``--max-tokens N`` whose help is
that docstring and whose default is the field's (the CLI never repeats a default). Booleans become
switches that flip the default (``early_stop = True`` gives ``--no-early-stop``). ``X | None`` fields take
``none``; tuple fields take comma-separated items (``tuple[int, ...]``: numbers); an ``ids`` field of question
ids also takes ``@FILE`` (``id_list``), in every command.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import textwrap
import typing
from functools import cache
from typing import Any, Callable, Iterable

from deliberation.types import formerly_named

SUPPRESS = argparse.SUPPRESS


@cache
def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of the dataclass ``cls`` (and its bases), whitespace folded, ``%`` doubled
    for argparse."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass) and klass is not object:
            docs.update(_docs_in(klass))
    return docs


def _docs_in(klass: type) -> dict[str, str]:
    body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
    docs = {}
    for node, after in zip(body, body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and _is_doc(after):
            docs[node.target.id] = " ".join(after.value.value.split()).replace("%", "%%")  # argparse formats help
    return docs


def _is_doc(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def names(text: str) -> tuple[str, ...]:
    """A comma-separated list of names (``a,b`` or ``a, b``), at least one and none empty: a list naming nothing
    (``--ids ""``) would otherwise mean what leaving the flag out means (all questions, every method)."""
    found = tuple(name.strip() for name in text.split(","))
    if not any(found):
        raise argparse.ArgumentTypeError(f"names nothing ({text!r}); give at least one name")
    if not all(found):  # 'a,,b' is a slip: dropping the gap would run a smaller team than the one typed
        raise argparse.ArgumentTypeError(f"has an empty item ({text!r}); remove the extra comma")
    return found


def id_list(text: str) -> tuple[str, ...]:
    """--ids: comma-separated question ids, or @FILE holding ids separated by newlines, commas or spaces; at
    least one (no ids is not "all questions": leave --ids out for that)."""
    if not text.startswith("@"):
        return names(text)
    from deliberation.errors import DelibError, existing, read_user_text

    path = existing(text[1:], "id file", "write --ids @FILE, FILE a text file of question ids, one a line")
    ids = tuple(read_user_text(path, "the id file").replace(",", " ").split())
    if not ids:
        raise DelibError(f"the id file {text[1:]} holds no question id; write one id a line (or leave --ids out "
                         "for all questions)")
    return ids


def prompt_set(text: str) -> str:
    """--prompts: a registered prompt set, refused while the command line is read (before a run or a store is
    written) and listed in the message."""
    from deliberation.engine.prompts import PROMPTS
    from deliberation.errors import DelibError

    try:
        PROMPTS.resolve(text)
    except DelibError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


FIELD_PARSERS: dict[str, tuple[Callable[[str], Any], str]] = {"ids": (id_list, "ID,ID|@FILE"),
                                                               "prompts": (prompt_set, "NAME")}
"""Fields whose flag takes more than their type says, by field name: the parser and the metavar."""


def _items(item: type) -> Callable[[str], tuple[Any, ...]]:
    """Comma-separated items of type ``item`` (``tuple[int, ...]``: ``100,50``)."""
    def parse(text: str) -> tuple[Any, ...]:
        try:
            return tuple(item(x) for x in names(text))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {item.__name__}, got {text!r}")

    parse.__name__ = f"{item.__name__} list"
    return parse


def _optional(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        return None if text.lower() == "none" else convert(text)

    parse.__name__ = getattr(convert, "__name__", "value")
    return parse


def converter(tp: Any) -> Callable[[str], Any]:
    """How a flag's text becomes the field's type."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if type(None) in typing.get_args(tp):
        return _optional(converter(args[0]))
    if typing.get_origin(tp) is tuple:
        item = typing.get_args(tp)[0]
        return names if item is str else _items(item)
    return tp


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _default_text(value: Any) -> str:
    if value is None:
        return "default: none"
    if value == ():
        return "default: none"
    return f"default {value}"


def add_flags(parser: argparse.ArgumentParser, cls: type, only: Iterable[str] | None = None,
              skip: Iterable[str] = (), suppress: bool = False, hidden: Iterable[str] = ()) -> None:
    """A flag per field of ``cls`` (``only`` these, minus ``skip``). ``suppress``: an absent flag leaves no
    attribute, so the dataclass keeps its default (how ``delib train`` overrides only what is given).
    ``hidden``: fields whose flags are accepted but not shown in --help (a value fixed elsewhere that an older
    command may still name)."""
    hints, docs = typing.get_type_hints(cls), field_docs(cls)
    wanted = set(only) if only is not None else None
    for f in dataclasses.fields(cls):
        if f.name in set(skip) or (wanted is not None and f.name not in wanted):
            continue
        _add(parser, f, hints[f.name], None if f.name in set(hidden) else docs.get(f.name, ""), suppress)


class _Renamed(argparse.Action):
    """A renamed field's former flag: refused with a line naming the new one (``types.formerly``), which is
    its ``dest`` (it sets nothing)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        parser.error(f"{option_string} is now {self.dest} (same meaning); rename it")


def _add(parser: argparse.ArgumentParser, f: dataclasses.Field, tp: Any, doc: str | None, suppress: bool) -> None:
    """The field's flag; ``doc`` None: accepted, not shown in --help."""
    if formerly_named(f) is not None:
        parser.add_argument(flag(formerly_named(f)), dest=flag(f.name), action=_Renamed, nargs="?", help=SUPPRESS,
                            default=SUPPRESS)
    default = f.default
    if tp is bool:
        switch = flag(f.name) if not default else "--no-" + f.name.replace("_", "-")
        parser.add_argument(switch, dest=f.name, action="store_false" if default else "store_true",
                            default=SUPPRESS if suppress else default,
                            help=SUPPRESS if doc is None else f"turns it off (on by default): {doc}" if default
                            else f"turns it on (off by default): {doc}")
        return
    parse, metavar = FIELD_PARSERS.get(f.name, (converter(tp), _metavar(tp)))
    parser.add_argument(flag(f.name), dest=f.name, type=parse, metavar=metavar,
                        default=SUPPRESS if suppress else default,
                        help=SUPPRESS if doc is None else _help(doc, default))


def _help(doc: str, default: Any) -> str:
    """A field's docstring, with its default appended unless the docstring says it (a generated "default:
    none" would contradict "(default: the shipped checkpoint)")."""
    said = doc.lower()
    return doc if "(default" in said or "default:" in said else f"{doc} ({_default_text(default)})"


def _metavar(tp: Any) -> str:
    inner = [a for a in typing.get_args(tp) if a is not type(None)]
    base = inner[0] if type(None) in typing.get_args(tp) else tp
    if typing.get_origin(base) is tuple:
        return "N,N" if typing.get_args(base)[0] is int else "NAME,NAME"
    return {int: "N", float: "X"}.get(base, "VALUE")


def values(args: argparse.Namespace, cls: type, only: Iterable[str] | None = None,
           skip: Iterable[str] = ()) -> dict[str, Any]:
    """The fields of ``cls`` the parsed ``args`` hold (all given flags, or every default unless suppressed)."""
    wanted = set(only) if only is not None else None
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(cls)
            if hasattr(args, f.name) and f.name not in set(skip) and (wanted is None or f.name in wanted)}
