"""The method options: what a user may set for a method besides its benchmark and engine, declared once.

Each option is a field of ``MethodOptions``: its type, its default, its docstring (the help of its flag) and its
check in ``__post_init__``. Everything that carries options inherits these fields: ``MethodConfig`` (what a
method reads), ``RunSpec`` (so config.json holds them under their names), ``Replay`` and ``Variant`` (a labelled
method: an experiment's row, a replayed variant). From them come the ``delib run``/``ask``/``evaluate`` flags,
the keys of an experiment file's ``[[variants]]``, the Python calls' ``**options`` and, for a config.json written
before an option existed, its value (the default, ``runs/directory.py``). A method entry lists the options it
reads (``Method.options``); one that is given to a method reading none of them is refused, never silently
ignored. Adding an option is adding a field here (and reading it in the methods that use it).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from deliberation.config import EngineConfig
from deliberation.errors import DelibError, require_at_least, require_number


EMPTY_FIXES = {"policy": "name a checkpoint or a shipped name, or leave --policy out for the default",
               "graph": "name the graph.json of `delib optimize-graph`",
               "workflow": "name the workflow.json of `delib aflow-search`"}
"""The options naming a file, and what to pass instead of an empty one."""


@dataclass(frozen=True, kw_only=True)
class MethodOptions:
    """The method options (see the module docstring); keyword-only, so any record can inherit them."""

    policy: str | None = None
    """mpdf: a policy checkpoint, a path or a shipped name (default: the checkpoint shipped in the package);
    mpdf-allocate: an allocator checkpoint from `delib train-allocator`, a path or a shipped name (default:
    the allocator trained on qwen2.5-coder-1.5b's training trees)."""
    confidence_threshold: float = 0.7
    """confidence-threshold, agreement-then-confidence (and mpdf's fallback rule): persist at or above this
    critic P(Yes)."""
    lazy_critic: bool = False
    """mpdf and the rules that read the critic: call it only where a confidence is read, by a later round's
    decisions or a tied final vote (none for a team that agrees at round 0 and stops, none after the last
    round's REFINEs unless the vote is tied): the same answers for fewer tokens. Off by default: every
    committed result, the paired experiment included, charges every critic call."""
    vote_temperature: float = 0.1
    """cisc, cisc-logprob: the softmax temperature T of the confidence-weighted vote (each ballot weighs
    softmax(confidence / T)): low T lets the most confident answer win, high T tends to the plain vote. CISC
    tunes it per model and confidence; ``delib tune-votes`` does on training trees."""

    adaptive_threshold: float = 0.95
    """adaptive-consistency: stop once the leader's posterior probability of staying the leader (its Beta
    criterion) exceeds this; 0.95 is the paper's default (Aggarwal et al. 2023). Lower: fewer samples."""
    esc_window: int = 5
    """early-stopping-sc: samples a window draws; sampling stops once one window's answers all agree (5 in Li
    et al. 2024, Figure 1). Smaller: fewer samples."""

    stop_at: float | None = None
    """mpdf-allocate: STOP once the allocator's probability of STOP reaches this (default: the checkpoint's
    operating point); higher draws more samples, lower fewer."""
    graph: str | None = None
    """gptswarm, agentprune: the optimised communication graph (graph.json from `delib optimize-graph`); it
    refuses the questions it was optimised on."""
    workflow: str | None = None
    """aflow: the workflow found by `delib aflow-search` (workflow.json); it refuses the questions it was
    searched on."""
    php_max_calls: int = 10
    """php: the most interactions a question gets (the base answer included); the reference loop has no cap,
    its paper reports 2.0-2.4 on average (Zheng et al. 2023, Table 8), so 10 ends only loops that never
    settle."""

    def __post_init__(self) -> None:
        for name, fix in EMPTY_FIXES.items():  # an empty --policy would read as the default, "" as a path
            if getattr(self, name) is not None and not getattr(self, name).strip():
                raise DelibError(f"--{name} is empty; {fix}")
        if self.stop_at is not None:
            require_number("--stop-at", self.stop_at, 0, 1, "(a probability)")
        require_at_least("--php-max-calls", self.php_max_calls, 2, "(the base answer and one hinted one)", 1000)
        require_number("--adaptive-threshold", self.adaptive_threshold, 0, 1, "(a probability)")
        require_at_least("--esc-window", self.esc_window, 1, "(samples per window)", 1000)
        require_number("--confidence-threshold", self.confidence_threshold, 0, 1,
                       "like the critic's P(Yes) it is compared with")
        require_number("--vote-temperature", self.vote_temperature, 0.001, 1000, "(a softmax temperature)")

    def method_options(self) -> dict[str, Any]:
        """The options this record holds, by name (the fields of a record that inherits them left out)."""
        return {name: getattr(self, name) for name in OPTION_NAMES}

    def given(self) -> tuple[str, ...]:
        """The options set to other than their default: the one test of "was it given?"."""
        return tuple(name for name, value in self.method_options().items() if value != DEFAULTS[name])


@dataclass(frozen=True)
class Variant(MethodOptions):
    """A method under a label, with its options: a row of a table, whether an experiment file's (``[[variants]]``
    and its plain methods) or one that ``delib tune-rules``, ``tune-votes`` and ``compare`` replay."""

    label: str
    method: str
    directory: str = ""
    """The name of its run directory, where a replay names it (an experiment names cells by label and seed)."""
    engine: EngineConfig | None = None
    """The engine it runs with, where an experiment file sets one (a replay runs its store's)."""


OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in fields(MethodOptions))
DEFAULTS: dict[str, Any] = MethodOptions().method_options()
