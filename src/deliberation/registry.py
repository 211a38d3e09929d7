"""Registries: every kind of component is one ``Registry``, a read-only table from a name to an entry.

A kind's table is declared once, as one literal in the module that owns the kind (``backends.BACKENDS``,
``rl/advantages.ADVANTAGES``, ...), in the order its names are listed. An entry is the object itself, or a
``"module:attribute"`` string imported on first access and kept, so listing names (the CLI's help) imports
nothing heavy; a family that a module builds from a registry of its own is named entry by entry as
``"module:TABLE[key]"`` (the fixed rules' methods). A table derived from other registries (the algorithms, from
the advantage functions and the objectives) is given as the function that builds it, read again at every use.
An unknown name is one line listing the valid ones (``Registry.resolve``).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar, Union

from deliberation.errors import DelibError

T = TypeVar("T")
REFERENCE = re.compile(r"^([\w.]+):(\w+)(?:\[(.+)\])?$")
"""A lazy entry: ``module:attribute`` or ``module:TABLE[key]``."""
Table = Union[Mapping[str, Any], Callable[[], Mapping[str, Any]]]


def imported(reference: str) -> Any:
    """The object a ``"module:attribute"`` (or ``"module:TABLE[key]"``) reference names, its module imported now."""
    found = REFERENCE.match(reference)
    if found is None:
        raise ValueError(f"{reference!r} is no 'module:attribute' reference")
    module, attribute, key = found.groups()
    named = getattr(importlib.import_module(module), attribute)
    return named if key is None else named[key]


class Registry(Mapping[str, T]):
    """The entries of one ``kind`` (``"backend"``) by name, in the table's order. Reading a name resolves its
    entry (a reference is imported once); listing, counting and ``in`` never import."""

    def __init__(self, kind: str, table: Table) -> None:
        bad = [] if callable(table) else [e for e in table.values() if isinstance(e, str) and not REFERENCE.match(e)]
        if bad:
            raise ValueError(f"{kind} entries {bad} are no 'module:attribute' references")
        self.kind = kind
        self.table = table  # the declaration (or the function building it); a test adds an entry by patching it
        self._resolved: dict[str, Any] = {}  # reference -> the object it names, imported once

    def _entries(self) -> Mapping[str, Any]:
        return self.table() if callable(self.table) else self.table

    def __getitem__(self, name: str) -> T:
        entry = self._entries()[name]
        if not isinstance(entry, str):
            return entry
        if entry not in self._resolved:
            self._resolved[entry] = imported(entry)
        return self._resolved[entry]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())

    def __contains__(self, name: object) -> bool:
        return name in self._entries()

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {list(self)})"

    def resolve(self, name: str) -> T:
        """The entry registered under ``name``; a one-line DelibError listing the valid names if none."""
        if name not in self:
            raise DelibError(f"unknown {self.kind} {name!r}; choose one of: {', '.join(self)}")
        return self[name]
