"""Lazy registries: a name maps to ``"module:attribute"``, imported on first use.

Backends, benchmarks and methods register this way, so listing names (the CLI's help) imports nothing
heavy, and adding an implementation is one file plus one line in its package's table. A family that a
module builds from a registry of its own is named entry by entry as ``"module:TABLE[key]"`` (the fixed rules'
methods).
"""

from __future__ import annotations

import importlib
from typing import Any, Mapping

from deliberation.errors import DelibError


def lookup(table: Mapping[str, str], name: str, kind: str) -> Any:
    """The object registered under ``name``; a one-line DelibError listing the valid names if none."""
    if name not in table:
        raise DelibError(f"unknown {kind} {name!r}; choose one of: {', '.join(table)}")
    module, attribute = table[name].split(":")
    attribute, _, key = attribute.removesuffix("]").partition("[")
    found = getattr(importlib.import_module(module), attribute)
    return found[key] if key else found
