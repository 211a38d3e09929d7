"""``delib train-allocator``: train an allocator on training stores and write it with its record.

Reads every built question of each store (``allocate/paths.py``: ``samples`` round-0 samples each, offline),
trains (``allocate/train.py``) and writes ``OUT/allocator.pt`` (its meta: team, cap, step, vote, lambda,
the training questions and stores) and ``OUT/training.json`` (the same, and what it and self-consistency
at every k score and spend on the training questions: in-sample figures, never results). A store of a test
split is refused unless asked for knowingly: the allocator would learn the questions it is measured on.
"""

from __future__ import annotations

from dataclasses import asdict
import logging
from pathlib import Path
from typing import Sequence

import numpy as np

from deliberation.allocate.network import LearnedAllocator, save_allocator
from deliberation.files import write_json_atomic
from deliberation.rl.allocation.paths import Path as QuestionPath
from deliberation.rl.allocation.paths import question_paths, simulate
from deliberation.rl.allocation.config import AllocatorFit
from deliberation.rl.allocation.train import train
from deliberation.engine.spec import VoteWeights
from deliberation.errors import DelibError
from deliberation.allocate.episode import DELIBERATION
from deliberation.policy.shipped import sha256_hex
from deliberation.trees.manifest import refuse_repeated, refuse_test_store
from deliberation.trees.store import open_store

log = logging.getLogger(__name__)
ALLOCATOR_FILE = "allocator.pt"
RECORD_FILE = "training.json"


def load_paths(trees: Sequence[str], samples: int, vote: VoteWeights | None, moves: int,
               allow_test: bool = False, data_dir: str | None = None) -> list[QuestionPath]:
    """Every built question's path in ``trees`` (a deliberation branch for a three-move allocator)."""
    found: list[QuestionPath] = []
    seen: set[str] = set()
    for name in trees:  # every store, before any is read whole
        refuse_test_store(name, "an allocator trained", allow_test)
    for name in trees:
        store = open_store(name)
        if samples <= store.manifest.agents:
            raise DelibError(f"--samples {samples} leaves the allocator no decision after the team of "
                             f"{store.manifest.agents}; give more (the stores hold {store.manifest.samples})")
        new = question_paths(store, samples, vote, DELIBERATION if moves == 3 else None, data_dir)
        seen = refuse_repeated(seen, (p.example_id for p in new), name, "name each --trees store once")
        found += new
    old = [p.example_id for p in found if p.unsummarised]
    if old:
        log.warning("%d of %d questions (e.g. %s) hold samples without a log-probability summary (built before "
                    "stores recorded them): their states read no log-probability", len(old), len(found), old[0])
    return found


def fit(spec: AllocatorFit, data_dir: str | None = None) -> Path:
    """Train and write (see the module docstring); returns the checkpoint's path. An --out that holds an
    allocator already is refused before anything is read: runs may have used it, so it is never overwritten."""
    out = Path(spec.out)
    held = [out / name for name in (ALLOCATOR_FILE, RECORD_FILE) if (out / name).exists()]
    if held:
        raise DelibError(f"--out {spec.out} holds an allocator already ({held[0].name}); pass another --out, or "
                         "delete it to train again")
    paths = load_paths(spec.trees, spec.samples, spec.vote, spec.training.moves, spec.allow_test, data_dir)
    net, _ = train(paths, spec.training)
    team = paths[0].team
    meta = {"team": team, "limit": spec.samples, "step": spec.training.step,
            "vote": None if spec.vote is None else [spec.vote.signal, spec.vote.temperature],
            "training": asdict(spec.training), "stores": list(spec.trees), "command": spec.command,
            "questions": [p.example_id for p in paths]}
    target = save_allocator(out / ALLOCATOR_FILE, net, meta)
    allocator = LearnedAllocator(net, spec.training.step, meta, first=team)
    write_json_atomic(out / RECORD_FILE, {**meta, "sha256": sha256_hex(target),
                                          "in_sample": in_sample(paths, allocator, spec.training.moves == 3)})
    return target


def in_sample(paths: Sequence[QuestionPath], allocator: LearnedAllocator, three: bool) -> dict[str, object]:
    """What the allocator and self-consistency at each k score and spend on the training questions."""
    outs = [simulate(p, allocator, (lambda s: allocator.choose(s, True)) if three else None) for p in paths]
    limit = paths[0].limit
    return {"accuracy": float(np.mean([o.correct for o in outs])), "tokens": float(np.mean([o.tokens for o in outs])),
            "samples": float(np.mean([o.drawn for o in outs])),
            "deliberated": float(np.mean([o.deliberated for o in outs])),
            "self_consistency": {str(k): {"accuracy": float(np.mean([p.plain.correct[k] for p in paths])),
                                          "tokens": float(np.mean([p.plain.tokens[k] for p in paths]))}
                                 for k in range(1, limit + 1)}}
