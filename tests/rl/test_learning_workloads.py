"""Every workload that learns from its questions (rollouts for a policy, a graph's edges, a workflow) defaults
to a train split and refuses a test split unless asked, in one line naming --allow-test."""

from __future__ import annotations

import pytest

from deliberation.errors import DelibError
from deliberation.rl.aflow_search import AFlowSearch
from deliberation.rl.collect import CollectSpec
from deliberation.rl.graph_optimize import GraphOptimization


@pytest.mark.parametrize("kind", [CollectSpec, GraphOptimization, AFlowSearch])
def test_a_learning_workload_refuses_a_test_split_unless_asked(kind):
    assert kind(backend="scripted").split == "train"
    with pytest.raises(DelibError, match=r"^--split test would .+; \w+ on a train split \(or pass --allow-test") as err:
        kind(backend="scripted", split="test")
    assert "\n" not in str(err.value)
    assert kind(backend="scripted", split="test", allow_test=True).split == "test"
