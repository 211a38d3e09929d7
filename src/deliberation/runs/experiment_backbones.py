"""An experiment file's ``[[backbones]]``: the models the whole grid runs on, as a paper compares methods on
several LLMs. Parsed here so ``runs/experiment_file.py`` stays one grid parser::

    [backend]
    name = "openai"
    base_url = "${DELIB_BASE_URL}"      # read from the environment when the cells are built
    [[backbones]]
    label = "qwen2.5-7b"                # the folder of its cells: <out>/qwen2.5-7b/<benchmark>/<label>-s<seed>
    model = "Qwen/Qwen2.5-7B-Instruct"
    [[backbones]]
    label = "llama3.1-8b"
    model = "meta-llama/Llama-3.1-8B-Instruct"
    base_url = "${LLAMA_URL}"           # a server of its own

Each table is a ``label`` and [backend] options (of [backend]'s backend) set over [backend]'s for its cells.
Every method, variant, benchmark and seed runs on every backbone, backbone after backbone. ``{backbone}`` in
a variant's ``policy``, ``graph`` or ``workflow`` is the backbone's label, for an artefact trained or
optimised on that model (``graph = "runs/paper/graphs/{backbone}/agentprune/graph.json"``). A file without
[[backbones]] has one, unlabelled, whose cells stay where they always were (``<out>/<benchmark>/...``).

A string backend option may name environment variables as ``${NAME}`` (``resolve_env``), so a shared file
holds no machine's address; they are read when the cells are built, so ``delib experiment --plan`` needs none.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from deliberation.backends import backend_options
from deliberation.errors import DelibError

ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""``${NAME}`` in a backend option: the environment variable NAME."""
BACKBONE = "{backbone}"
"""In a variant's path option: the label of the backbone its cell runs on (``Backbone.path``)."""
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")  # a label names a directory


@dataclass(frozen=True)
class Backbone:
    """A model the grid runs on: its label (its cells' folder under ``out``; "" for a file without
    [[backbones]]) and the [backend] options it sets."""

    label: str = ""
    options: dict[str, Any] = field(default_factory=dict)

    def path(self, value: Any) -> Any:
        """A method option with ``{backbone}`` replaced by this backbone's label (other values as they are)."""
        return value.replace(BACKBONE, self.label) if isinstance(value, str) else value


def parse(raw: Mapping[str, Any], backend: str, options: Mapping[str, Mapping[str, Any]],
          source: str) -> tuple[Backbone, ...]:
    """The file's backbones (``raw["backbones"]``) over the backend ``backend``; ``options``: each method or
    variant's method options by label, whose ``{backbone}`` needs backbones to name."""
    tables = raw.get("backbones")
    if tables is None:
        named = next((label for label, given in options.items() if any(BACKBONE in str(v) for v in given.values())),
                     None)
        if named is not None:
            raise DelibError(f"{source}: {named}: {BACKBONE} names a backbone, but the file has no [[backbones]]; "
                             "add them, or write the path out")
        return (Backbone(),)
    if "agents" in raw:
        raise DelibError(f"{source}: [[backbones]] and [[agents]] both choose the models; run a mixed team in a "
                         "file of its own")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise DelibError(f"{source}: backbones must be [[backbones]] tables, each a label and backend options "
                         f"(model = ...), got {tables!r}")
    found = tuple(_backbone(table, i, backend, source) for i, table in enumerate(tables))
    labels = [b.label for b in found]
    if len(set(labels)) < len(labels):
        raise DelibError(f"{source}: [[backbones]] labels must differ (each names a folder), got {labels}")
    return found


def _backbone(table: Mapping[str, Any], index: int, backend: str, source: str) -> Backbone:
    where = f"{source}: [[backbones]] #{index + 1}"
    label = table.get("label")
    if not isinstance(label, str) or not LABEL.fullmatch(label):
        raise DelibError(f"{where} needs a label of letters, digits, '.', '_', '+' or '-' (it names a folder), got "
                         f"{label!r}")
    params = backend_options(backend)
    unknown = [k for k in table if k != "label" and k not in params]
    if unknown and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        raise DelibError(f"{where} ({label}): backend {backend} takes no option {unknown[0]!r}; its options: "
                         f"{', '.join(params)}")
    return Backbone(label, {k: v for k, v in table.items() if k != "label"})


def resolve_env(options: Mapping[str, Any], source: str) -> dict[str, Any]:
    """``options`` with every ``${NAME}`` in a string replaced by the environment variable NAME; a one-line
    error naming the variable when it is not set."""
    def value(key: str, text: Any) -> Any:
        if not isinstance(text, str):
            return text
        unset = next((m.group(1) for m in ENV.finditer(text) if m.group(1) not in os.environ), None)
        if unset is not None:
            raise DelibError(f"{source}: backend option {key} = {text!r} reads the environment variable {unset}, "
                             f"which is not set; set it (export {unset}=...) and rerun")
        return ENV.sub(lambda m: os.environ[m.group(1)], text)

    return {key: value(key, text) for key, text in options.items()}
