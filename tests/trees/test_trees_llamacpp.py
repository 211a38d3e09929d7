"""Deliberation trees with the real llama.cpp backend (smollm2-135m): replays equal ``delib run``.

llama.cpp's output can depend on which requests share a batch, and a tree build batches differently from
an online run (all agents' REFINE calls at once). The equality therefore holds through the response cache
the store was built with: the online run is served the very completions the store recorded.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from deliberation.cli.main import main
from registered_methods import FROM_TREES, spec_at_defaults
from replays import episodes

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # whole replays on the real model (make test-slow)
METHODS = FROM_TREES
COMMON = ("--benchmark", "gsm8k", "--limit", "2", "--backend", "llamacpp", "--model", "smollm2-135m",
          "--max-tokens", "48", "--quiet")


@pytest.fixture(scope="module")
def built(tmp_path_factory, smollm2_path) -> Path:
    root = tmp_path_factory.mktemp("llama-trees")
    assert main(["tree", *COMMON, "--out", str(root / "store"), "--cache", str(root / "cache.sqlite")]) == 0
    return root


DELIBERATING = tuple(m for m in METHODS if spec_at_defaults(m).policy is not None)
"""The methods that read --rounds: the sampling ones answer at round 0 whatever it says."""


@pytest.mark.parametrize("rounds, replayed", [("1", METHODS), ("2", DELIBERATING)])
def test_replay_equals_delib_run_through_the_store_cache(built, rounds, replayed):
    replay = built / f"replay-{rounds}"
    assert main(["evaluate", "--trees", str(built / "store"), "--method", ",".join(replayed), "--rounds", rounds,
                 "--quiet", "--out", str(replay)]) == 0  # round 2 is generated here, through the cache
    for method in replayed:
        run = built / f"run-{method}-{rounds}"
        assert main(["run", "--method", method, *COMMON, "--rounds", rounds, "--cache", str(built / "cache.sqlite"),
                     "--out", str(run)]) == 0
        assert episodes(replay / method) == episodes(run), method
