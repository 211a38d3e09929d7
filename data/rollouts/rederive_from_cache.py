"""Re-derive a rollout directory's questions from the response cache with the current code, no LLM calls.

    DELIB_DATA_DIR=../shared/data python data/rollouts/rederive_from_cache.py ROLLOUT_DIR CACHE OUT_DIR

For when scoring or features change after collection: every question is replayed with the settings of
ROLLOUT_DIR/manifest.json against a backend that only answers from CACHE (the collection's SQLite response
cache; copy it first if a collector is writing to it). Questions whose replay needs a request the cache
does not hold (their trajectory changed) are left out and reported; the next `delib collect` into the
directory collects them again. Writes OUT_DIR/rollouts.jsonl.gz; move it over ROLLOUT_DIR's file by hand.
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

from deliberation import benchmarks
from deliberation.backends.cache import CachedBackend
from deliberation.config import EngineConfig
from deliberation.engine.loop import example_rng, make_context
from deliberation.files import append_gzip_line, read_gzip_lines
from deliberation.rl import rollout_files as files
from deliberation.rl.collect import CollectSpec, behaviour_policy
from deliberation.rl.rollouts import collect_question, collecting


class Miss(Exception):
    """The replay asked for a request the cache does not hold."""


class CacheOnly:
    """A backend named like the collecting one that has no model: every cache miss raises."""

    supports_logprobs = True

    def __init__(self, name: str, model: str) -> None:
        self.name, self.model = name, model

    def generate(self, requests):
        raise Miss(len(requests))

    def close(self) -> None:
        pass


def main(src: Path, cache: str, out: Path) -> None:
    manifest = json.loads((src / files.MANIFEST).read_text())
    engine = EngineConfig(**manifest["engine"])
    spec = CollectSpec(engine=engine, joint_actions=manifest["samples"], epsilon=manifest["epsilon"],
                       policy=manifest["policy"])
    backend = CachedBackend(CacheOnly(manifest["backend"], manifest["model"]), cache)
    bench = benchmarks.get(manifest["benchmark"])
    rows = read_gzip_lines(src / files.ROLLOUTS)
    examples = {e.id: e for e in bench.load(manifest["split"])}
    behaviour = behaviour_policy(spec)
    method = collecting(behaviour)
    out.mkdir(parents=True, exist_ok=True)
    stats: collections.Counter[str] = collections.Counter()
    for row in rows:
        example = examples[row["example_id"]]
        ctx = make_context(example, backend, bench, engine, method)
        try:
            decisions = collect_question(ctx, spec.joint_actions, example_rng(engine.seed, example.id))
        except Miss:
            stats["left out (trajectory changed)"] += 1
            print("left out", example.id)
            continue
        new = files.question_row(row["model"], row["benchmark"], row["split"], example.id, decisions)
        same = json.dumps(new["decisions"]) == json.dumps(row["decisions"])
        stats["same" if same else "changed"] += 1
        if not same:
            print("changed", example.id)
        append_gzip_line(out / files.ROLLOUTS, new)
    print(dict(stats))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
