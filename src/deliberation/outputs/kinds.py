"""The kinds of output a command writes into its ``--out``, each known by the file only it holds, so that a
command refuses a folder holding another kind's output: a run written into a rollout directory (or a tree
store into a run) would leave a folder that readers take for both, and ``delib report``, ``delib train`` and
``delib tune-rules`` would each read the half they know."""

from __future__ import annotations

from pathlib import Path

from deliberation.errors import DelibError

EPISODES = "episodes.jsonl"
"""A run directory's episodes (``runs/directory.py``)."""
ROLLOUTS = "rollouts.jsonl.gz"
"""A rollout directory's decisions (``rl/rollout_files.py``)."""
TREES = "trees.jsonl.gz"
"""A tree store's trees (``trees/store.py``)."""
METRICS = "metrics.jsonl"
"""A training directory's metrics (``rl/trainer.py``)."""
ITERATION = "iter-{}"
"""The folder of each iteration of ``delib iterate`` (``rl/iterate.py``), by its number."""

RUN, ROLLOUT_DIR, TREE_STORE = "a run", "a rollout directory", "a tree store"
TRAINING, ITERATIONS = "a training directory", "the iterations of `delib iterate`"
"""Each kind as a refusal names it: what ``refuse_other_kind`` and ``other_kind`` take as ``own``."""
KINDS = {RUN: EPISODES, ROLLOUT_DIR: ROLLOUTS, TREE_STORE: TREES, TRAINING: METRICS, ITERATIONS: ITERATION.format(0)}
"""Each kind and the file (or folder) that marks a folder holding it."""


def other_kind(folder: str | Path, own: str) -> str | None:
    """The kind of output other than ``own`` (a key of ``KINDS``) that ``folder`` holds, if any."""
    return next((kind for kind, mark in KINDS.items() if kind != own and (Path(folder) / mark).exists()), None)


def refuse_other_kind(folder: str | Path, own: str) -> None:
    """Refuse ``folder`` as the --out of an output of kind ``own`` when it holds an output of another kind."""
    other = other_kind(folder, own)
    if other is not None:
        raise DelibError(f"--out {folder} holds {other}, not {own}; pass another --out")
