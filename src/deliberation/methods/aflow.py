"""AFlow's workflows as methods (``protocols/workflow.py``): ``aflow-gsm8k`` and ``aflow-math``, the
workflows the paper found for those benchmarks, transferred (not searched here) and usable on any benchmark;
``aflow``, the workflow a `delib aflow-search` found (``--workflow``), which refuses the questions it was
searched on."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Sequence

from deliberation.benchmarks.sandbox.isolation import require_isolation
from deliberation.config import refuse_learned
from deliberation.engine.spec import MethodSpec
from deliberation.errors import DelibError
from deliberation.methods.base import Method, MethodConfig, MethodRecord, fixed
from deliberation.methods.calls import Calls
from deliberation.protocols.aflow import ATTEMPTS
from deliberation.policy.shipped import content_hash
from deliberation.protocols.workflow import TRANSFERRED, Workflow, load_searched, search_tokens, workflow_episode
from deliberation.types import Example

def _one_agent(engine):
    return replace(engine, agents=1, rounds=0)


WORKFLOW_SHOWN = (("agents", "the calls of its workflow"), ("rounds", "the steps of its workflow"))
"""What ``delib run``'s note says a workflow runs with when --agents or --rounds is given (``pinned_shown``)."""


def workflow_calls(workflow: Workflow) -> Calls:
    """A custom step's ``n`` calls, one per ensemble, one to ``ATTEMPTS`` per programmer (it retries code that
    fails)."""
    programmers = sum(s.op == "programmer" for s in workflow.steps)
    least = sum(s.n if s.op == "custom" else 1 for s in workflow.steps)
    return Calls((least, least + programmers * (ATTEMPTS - 1)))


def sandboxed(workflow: Workflow) -> None:
    """Refuse before the run where the workflow's programs could not run isolated (not at its first program)."""
    if workflow.runs_code:
        require_isolation()


def transferred(found_on: str) -> Method:
    return fixed(MethodSpec(name=f"aflow-{found_on}", policy=None, protocol=TRANSFERRED[found_on]),
                 engine=_one_agent, episode=workflow_episode, tree_requests=False, pinned_shown=WORKFLOW_SHOWN,
                 check=lambda cfg, examples: sandboxed(TRANSFERRED[found_on]),
                 shown=lambda cfg: TRANSFERRED[found_on].most_shown() * cfg.engine.max_tokens,
                 calls=lambda cfg: workflow_calls(TRANSFERRED[found_on]),
                 about=f"the workflow AFlow found for {found_on.upper()}, transferred (Zhang et al. 2025)")


def searched(cfg: MethodConfig) -> tuple[Workflow, frozenset[str]]:
    """The workflow ``--workflow`` names and the ids it was searched on."""
    if cfg.workflow is None:
        raise DelibError("aflow runs a searched workflow: search one with `delib aflow-search` on training "
                         "questions, then pass --workflow OUT/workflow.json (or run aflow-gsm8k / aflow-math)")
    return load_searched(cfg.workflow)


def _check(cfg: MethodConfig, examples: Sequence[Example]) -> None:
    workflow, seen = searched(cfg)
    sandboxed(workflow)
    refuse_learned(examples, seen, f"{cfg.workflow} was searched", "search on a split that excludes them")


GSM8K = transferred("gsm8k")
MATH = transferred("math")
SEARCHED = Method(spec=lambda cfg: MethodSpec(name="aflow", policy=None, protocol=searched(cfg)[0]),
                  engine=_one_agent, options=frozenset({"workflow"}), episode=workflow_episode, check=_check,
                  pinned_shown=WORKFLOW_SHOWN,
                  tree_requests=False, calls=lambda cfg: workflow_calls(searched(cfg)[0]),
                  shown=lambda cfg: searched(cfg)[0].most_shown() * cfg.engine.max_tokens,
                  about="a workflow found by `delib aflow-search`, --workflow (Zhang et al. 2025)",
                  optimised=lambda cfg: search_tokens(str(cfg.workflow)),
                  record=lambda cfg: MethodRecord(
                      workflow_used=f"{cfg.workflow} {content_hash(Path(str(cfg.workflow)))}"))
