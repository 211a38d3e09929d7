"""A descriptive check of the registered allocators on their own training questions, split by whether every
sample holds a log-probability summary. Training data only: no test question is read.

    python experiments/allocation_training_check.py [--stores DIR] [--registration FILE] [--out DIR]

The first GSM8K training questions were built before the stores recorded log-probability summaries, so some
of their samples (and their round-1 updates) carry none; every test question's do. On such a sample the
allocator's state reads no log-probability and its weighted vote gives the sample the least confident known
weight. This script replays the registered checkpoints at their registered ``stop_at`` (the primary, and the
twin with DELIBERATE open) and self-consistency over the reference k on every training question, on those
whose every sample is summarised and on the others: accuracy and tokens a question, in-sample (they trained
on these questions), to show how much of the preparation's figures the unsummarised questions carry. A
question counts as unsummarised by its round-0 samples (the same 15 lack summaries on their round-1 updates,
which the twin's deliberation reads, too). Writes OUT/training_check.json and OUT/training_check.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Sequence

from deliberation.allocate.network import load_allocator
from deliberation.cli.common import Parser
from deliberation.engine.spec import VoteWeights
from deliberation.errors import exit_status
from deliberation.rl.allocation.fit import load_paths
from deliberation.rl.allocation.paths import Path as QuestionPath

from allocation_compare import checkpoints
from allocation_prepare import TRAINING, mean_outcome, sc

REPO = Path(__file__).resolve().parents[1]


def rows(weighted: Sequence[QuestionPath], plain: Sequence[QuestionPath],
         reg: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Accuracy and tokens a question of each registered allocator (on the paths of its weighted vote) and of
    self-consistency (on the plain vote's) over the same questions."""
    found = {}
    for name, path in checkpoints(reg).items():
        allocator = load_allocator(path).at(reg["stop_at"][name]).with_team(weighted[0].team)
        accuracy, tokens = mean_outcome(weighted, allocator, three=name == "deliberate")
        found[name] = {"accuracy": accuracy, "tokens": tokens}
    accuracy, tokens = sc(plain, reg["reference_k"])
    found[f"self-consistency-{reg['reference_k']}"] = {"accuracy": accuracy, "tokens": tokens}
    return found


def check(stores: Path, reg: dict[str, Any]) -> dict[str, Any]:
    import torch

    torch.set_num_threads(1)  # as the preparation simulated
    signal, temperature = load_allocator(checkpoints(reg)["primary"]).vote or (None, None)
    vote = None if signal is None else VoteWeights(signal, temperature)
    names = [str(stores / name) for name in TRAINING]
    weighted, plain = load_paths(names, reg["limit"], vote, 3), load_paths(names, reg["limit"], None, 2)
    groups = {"every training question": lambda p: True, "every sample summarised": lambda p: not p.unsummarised,
              "some sample unsummarised": lambda p: bool(p.unsummarised)}
    found = {}
    for name, keep in groups.items():
        chosen = [i for i, p in enumerate(weighted) if keep(p)]
        found[name] = {"n": len(chosen)}
        if chosen:
            found[name]["rows"] = rows([weighted[i] for i in chosen], [plain[i] for i in chosen], reg)
    return {"unsummarised": {p.example_id: p.unsummarised for p in weighted if p.unsummarised}, "groups": found}


def markdown(result: dict[str, Any]) -> str:
    lines = ["# The registered allocators on their training questions, by log-probability summaries", "",
             "In-sample (the allocators trained on these questions); descriptive, not a result. Unsummarised "
             f"questions (samples without a summary): {len(result['unsummarised'])}.", "",
             "| questions | n | arm | accuracy | tokens a question |", "| --- | ---: | --- | ---: | ---: |"]
    for group, found in result["groups"].items():
        for arm, row in found.get("rows", {}).items():
            lines.append(f"| {group} | {found['n']} | {arm} | {100 * row['accuracy']:.1f}% | {row['tokens']:,.0f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    parser = Parser(description=__doc__.split("\n")[0])
    parser.add_argument("--stores", default=str(REPO / "data/trees/qwen2.5-coder-1.5b"))
    parser.add_argument("--registration", default=str(REPO / "docs/results/allocation/registered.json"))
    parser.add_argument("--out", default=str(REPO / "docs/results/allocation/prepare"))
    args = parser.parse_args(argv)
    result = check(Path(args.stores), json.loads(Path(args.registration).read_text()))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "training_check.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    (out / "training_check.md").write_text(markdown(result))
    print(out / "training_check.md")


if __name__ == "__main__":
    sys.exit(exit_status(lambda: main(sys.argv[1:])))
