"""The registered methods a test can run with their defaults alone, for tests about every method. The
others need a file an optimisation writes (an optimised graph, a searched workflow, a trained allocator not
shipped yet); their own tests make one."""

from __future__ import annotations

from deliberation import methods
from deliberation.engine.spec import MethodSpec
from deliberation.errors import DelibError
from deliberation.methods.base import MethodConfig
from deliberation.trees.build import runs_from_trees


def spec_at_defaults(name: str) -> MethodSpec | None:
    """The method's spec at its defaults, None when they do not suffice."""
    try:
        return methods.get(name).spec(MethodConfig())
    except DelibError:
        return None


AT_DEFAULTS = tuple(m for m in methods.METHODS if spec_at_defaults(m) is not None)
"""Every method that runs with its defaults."""
FROM_TREES = tuple(m for m in methods.METHODS if runs_from_trees(m))
"""Those that send only requests a tree build records (a store of round 0 and round 1 replays them)."""
