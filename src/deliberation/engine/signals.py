"""Signals of answer correctness computable at zero LLM cost, one registry entry each
(docs/design.md, section Zero-cost signals).

Each signal reads one agent's view in its team and returns a number oriented so that higher means more
likely right, or None where it is undefined (no critic call, no log-probability summary recorded, no
checkable arithmetic). They feed the AUROC table (``report/signals.py``) and the extended state's features
(``engine/features.py``). Sources: the critic's P(Yes) is the paper's introspective confidence; the agreement
share is self-consistency's vote share (Wang et al. 2023); the mean token log-probability is the sequence
likelihood of Kadavath et al. (2022); the lowest window is DeepConf's lowest group confidence (Fu et al.
2025); checked arithmetic re-evaluates the reasoning's written computations (engine/arith_check.py).
"""

from __future__ import annotations

from typing import Callable, Sequence

from deliberation.backends.logprob_summary import answer_mean
from deliberation.engine import arith_check
from deliberation.engine.consensus import support
from deliberation.engine.state import AgentView
from deliberation.registry import Registry

Signal = Callable[[Sequence[AgentView], int], "float | None"]
"""(the team's views, the agent) -> the signal, higher = more likely right; None where undefined."""


def critic(views: Sequence[AgentView], i: int) -> float | None:
    return views[i].confidence


def agreement(views: Sequence[AgentView], i: int) -> float | None:
    keys = [v.key for v in views]
    return support(keys, views[i].key) / len(views) if views[i].key is not None else 0.0


def logprob_mean(views: Sequence[AgentView], i: int) -> float | None:
    summary = views[i].summary
    return summary.mean if summary is not None else None


def logprob_lowest_window(views: Sequence[AgentView], i: int) -> float | None:
    summary = views[i].summary
    return summary.lowest_window if summary is not None else None


def logprob_answer(views: Sequence[AgentView], i: int) -> float | None:
    view = views[i]
    return answer_mean(view.summary, view.text, view.key) if view.summary is not None else None


def arith_ok(views: Sequence[AgentView], i: int) -> float | None:
    """Share of the checked computations that hold (None: nothing checkable)."""
    found = arith_check.summarize(views[i].text, views[i].key)
    return 1.0 - found.wrong / found.checked if found.checked else None


def arith_clean(views: Sequence[AgentView], i: int) -> float | None:
    """1 when no checked computation is wrong (also when there is none), else 0."""
    return float(arith_check.summarize(views[i].text, views[i].key).wrong == 0)


def answer_follows(views: Sequence[AgentView], i: int) -> float | None:
    """1 when the final answer is the last checked computation's result, 0 when not, None without one."""
    follows = arith_check.summarize(views[i].text, views[i].key).answer_follows
    return None if follows is None else float(follows)


SIGNALS: Registry[Signal] = Registry("signal", {
    "critic": critic,
    "agreement": agreement,
    "logprob-mean": logprob_mean,
    "logprob-lowest-window": logprob_lowest_window,
    "logprob-answer": logprob_answer,
    "arith-ok": arith_ok,
    "arith-clean": arith_clean,
    "answer-follows": answer_follows,
})
"""Every zero-cost correctness signal by name (the AUROC table's rows)."""
SUMMARY_SIGNALS = frozenset({"logprob-mean", "logprob-lowest-window", "logprob-answer"})
"""The signals read from a completion's log-probability summary (undefined where a backend records none)."""
