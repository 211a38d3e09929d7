"""The questions a command runs on: a split cut by a ``Selection`` (ids, offset, seeded subset) and a limit.

Shared by ``delib run``, ``delib tree`` and ``delib collect`` so a selection means the same everywhere.
With the default selection only the first ``limit`` questions are read, as before selections existed.
"""

from __future__ import annotations

import numpy as np

from deliberation.benchmarks.base import Benchmark
from deliberation.benchmarks.helpers.sources import require_split
from deliberation.config import Selection
from deliberation.errors import DelibError
from deliberation.types import Example


def load_selected(bench: Benchmark, split: str, limit: int | None, selection: Selection,
                  data_dir: str | None = None) -> list[Example]:
    """The questions of ``bench``/``split`` that ``selection`` keeps, then the first ``limit`` of them.
    ``data_dir``: a folder the user named (--data-dir, an experiment's data_dir), which config.json and the
    manifests record: the split must come from it (``sources.require_split``)."""
    if data_dir is not None and split in bench.splits:
        require_split(data_dir, bench.data_file(split))
    if selection == Selection():
        return bench.load(split, limit=limit, data_dir=data_dir)
    return select(bench.load(split, data_dir=data_dir), selection, f"{bench.name}/{split}")[:limit]


def select(examples: list[Example], selection: Selection, where: str) -> list[Example]:
    """``examples`` cut by ids, then offset, then a seeded subset, each keeping the split's order."""
    kept = _by_ids(examples, selection.ids, where) if selection.ids else examples
    kept = kept[selection.offset:]
    if selection.subset is not None:
        kept = subset(kept, selection.subset, selection.subset_seed)
    if not kept:
        raise DelibError(f"the selection keeps no question of {where} ({len(examples)} questions); "
                         "lower --offset or check --ids")
    return kept


def _by_ids(examples: list[Example], ids: tuple[str, ...], where: str) -> list[Example]:
    known = {e.id for e in examples}
    missing = [i for i in ids if i not in known]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise DelibError(f"--ids: {missing[0]!r}{more} not in {where} (its ids look like {examples[0].id!r})"
                         if examples else f"--ids: {where} holds no question")
    wanted = set(ids)
    return [e for e in examples if e.id in wanted]


def subset(examples: list[Example], n: int, seed: int) -> list[Example]:
    """``n`` of ``examples`` (all when fewer), in their order: the first ``n`` of one seeded permutation, so
    a larger ``n`` keeps every question a smaller one chose."""
    order = np.random.default_rng(seed).permutation(len(examples))[:n]
    return [examples[i] for i in sorted(order)]
