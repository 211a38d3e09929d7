"""Refusals whose constructors take fields of their own (a policy of other features, a backend's missing
options, a missing tree node) or nothing (an interrupted backend) survive pickling, as a Ray worker sends them
to the driver: the same type, fields and message."""

from __future__ import annotations

import pickle

import pytest

from deliberation.backends import MissingOptions
from deliberation.errors import DelibError, Interrupted
from deliberation.policy.checkpoint import FeatureMismatch
from deliberation.trees.store import MissingNode


@pytest.mark.parametrize("refusal, fields", [
    (FeatureMismatch("policy expects 5 features"), ("mismatch",)),
    (MissingOptions("openai", ("model", "base_url"), "the optimiser's ", role="optimizer"),
     ("backend", "options", "where", "role")),
    (MissingOptions("openai", ["model"], role="optimizer"), ("backend", "options", "where", "role")),
    (Interrupted(), ()),
    (MissingNode("no node q3/r0/a1 in the store"), ()),
    (DelibError("a plain refusal; its fix"), ()),
])
def test_a_refusal_crosses_a_process_boundary_whole(refusal, fields):
    again = pickle.loads(pickle.dumps(refusal))
    assert type(again) is type(refusal) and str(again) == str(refusal)
    assert all(getattr(again, name) == getattr(refusal, name) for name in fields)
