"""An experiment file's ``[[agents]]``: every agent on its own model (and backend), a mixed team
(``backends/team.py``, docs/guides/backends.md, "Mixed teams"). Parsed here so ``runs/experiment_file.py``
stays one grid parser::

    [backend]
    name = "llamacpp"
    n_ctx = 4096                      # shared by every agent on llamacpp
    [[agents]]
    model = "qwen2.5-coder-1.5b"
    [[agents]]
    model = "qwen2.5-coder-0.5b"
    [[agents]]
    model = "qwen2.5-coder-1.5b"      # the same model as agent 0: loaded once

Each table is one agent, in order: ``backend`` (default: [backend]'s ``name``) and that backend's options
(``model`` among them), over [backend]'s options when it is the same backend. The team sets the agents of
``[engine]`` unless ``[engine]`` gives them; every method and variant must then run that many agents, or
one (cot: agent 0's model). Unknown backends, options and models are refused when the file is read.
"""

from __future__ import annotations

from typing import Any, Mapping

from deliberation import methods
from deliberation.backends import check_options
from deliberation.backends.team import TEAM, team_options
from deliberation.config import EngineConfig
from deliberation.engine.team_checks import check_models
from deliberation.errors import DelibError


def team_backend(table: Any, backend: str, options: Mapping[str, Any], source: str) -> tuple[str, dict[str, Any]]:
    """The experiment's backend and options: [backend]'s, or with ``[[agents]]`` (``table``) a team over them."""
    if table is None:
        return backend, dict(options)
    if not isinstance(table, list) or not table or not all(isinstance(t, dict) for t in table):
        raise DelibError(f"{source}: agents must be [[agents]] tables, one per agent (model = ..., and optionally "
                         f"backend = ... and its options), got {table!r}")
    team = team_options(table, backend, options)
    try:
        check_options(TEAM, team)
    except DelibError as err:
        raise DelibError(f"{source}: [[agents]] {err}") from err
    return TEAM, team


def base_engine(models: int | None) -> EngineConfig:
    """The engine settings [engine] overrides: a team's size as the number of agents, else the defaults."""
    return EngineConfig() if models is None else EngineConfig(agents=models)


def check_arm(label: str, method: str, engine: EngineConfig, models: int | None, source: str) -> None:
    """Refuse a method or variant (``label``) whose agents a team of ``models`` cannot seat."""
    try:
        check_models(method, methods.get(method).engine(engine), models)
    except DelibError as err:
        raise DelibError(f"{source}: {label}: {err}") from err
