"""How well each zero-cost signal tells right answers from wrong ones on the training tree stores.

Every recorded response of each store (round-0 answers and every agent's REFINE, each in its team) with
its verdict and signals (``deliberation.trees.responses``), and per store and pooled the AUROC of each
signal with a 95% interval over resampled questions (``deliberation.report.signals``), written to
OUT/tables.md and OUT/signals.json. Pass training stores only (nothing here checks it): the signals
were chosen on them, before any test question was read. Offline: nothing is generated. A store still being
built is read up to its first question not yet built (its section says how many of the built ones that is).

    [DELIB_DATA_DIR=DIR] python experiments/signals_auroc.py [--ids ID,ID] OUT STORE [STORE ...]

``--ids``: only these questions (the state-and-actions table reads the validation fifth; experiments/state_actions.sh).
"""

from __future__ import annotations

import sys
from pathlib import Path

from deliberation.files import write_json_atomic
from deliberation.report.signals import markdown, signal_rows
from deliberation.trees.responses import responses
from deliberation.trees.store import TreeStore, built_prefix
from deliberation.types import to_json


def main(out: str, stores: list[str], ids: frozenset[str] | None = None) -> None:
    pooled, tables, sections = [], {}, []
    for path in stores:
        store = TreeStore.open(path)
        first = built_prefix(store, None)
        if not first:
            sections.append(f"### {path}: its first question is not built yet\n")
            continue
        rows = [r for r in responses(store, questions=first) if ids is None or r.example_id in ids]
        pooled += rows
        name = f"{store.manifest.model} {Path(path).name}"
        tables[name] = signal_rows(rows)
        partial = f" (the first {first} of {len(store.built)} built)" if first < len(store.built) else ""
        chosen = f", {len({r.example_id for r in rows})} of them named by --ids" if ids is not None else ""
        sections.append(markdown(f"{name}: {first} questions{partial}{chosen}, {len(rows)} responses",
                                 tables[name]))
    tables["pooled"] = signal_rows(pooled)
    sections.append(markdown(f"pooled: {len(pooled)} responses", tables["pooled"]))
    Path(out).mkdir(parents=True, exist_ok=True)
    write_json_atomic(Path(out) / "signals.json", {k: to_json(v) for k, v in tables.items()})
    (Path(out) / "tables.md").write_text("\n".join(sections))
    print("\n".join(sections))


if __name__ == "__main__":
    args = sys.argv[1:]
    named = None
    if args[:1] == ["--ids"]:
        named, args = frozenset(filter(None, args[1].split(","))), args[2:]
    if len(args) < 2:
        sys.exit("usage: python experiments/signals_auroc.py [--ids ID,ID] OUT STORE [STORE ...]")
    main(args[0], args[1:], named)
