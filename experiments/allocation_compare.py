"""The allocation experiment's comparison on the test stores, as registered (docs/results/allocation/
PREREGISTRATION.md): every arm replayed offline on the registered questions, then a descriptive report
(OUT/descriptive: every arm against self-consistency over 6 samples per benchmark and pooled, unadjusted; the
registered analysis is experiments/allocation_analysis.py's).

    python experiments/allocation_compare.py [--stores DIR] [--registration FILE] [--out DIR]
                                             [--questions N_GSM8K N_MATH]

Arms per test store: self-consistency and both CISC votes at k = 1..limit; adaptive-consistency at every
threshold and ESC at every window of the registered grids; the allocator at its registered operating point
and at every point of the grid (the primary and its twin at their registered operating points); its three-move
twin; the best fixed rule of the paired experiment at one round. Runs go to OUT/runs/<store>/<arm>, the
report to OUT/descriptive, every episode's outcome to OUT/episodes.csv.gz; a line a replay says on stdout how
far it is. Replays are offline: a store whose manifest does not yet promise the registered samples (its
extension unfinished) stops it first, in one line naming the extension to finish. The checkpoints are the
registered files (a relative path is from the repository root), refused unless their sha256 is the
registered one.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from deliberation.cli.common import Parser
from deliberation.errors import DelibError, exit_status
from deliberation.policy.shipped import sha256_hex
from deliberation.report.loading import read_episodes, sampling_label
from deliberation.report.write import write_report
from deliberation.runs.directory import EPISODES
from deliberation.runs.replay import Replay, evaluate
from deliberation.trees.store import built_examples, open_store

REPO = Path(__file__).resolve().parents[1]
STORES = {"gsm8k-test": "gsm8k/test", "math-test": "math/test"}
"""The test stores, and the benchmark split their runs report."""
QUESTIONS = (300, 150)
"""The registered test questions (PREREGISTRATION.md, Data): each store's first rows, in STORES' order."""
EPISODES_TABLE = "episodes.csv.gz"
"""Written into OUT: one line per arm and question of every run (the runs themselves, with every sample's text,
are about 250 MB), so that the paired tables can be recomputed without replaying."""
PARITY = "parity.json"
"""Written into OUT/runs once every allocator arm's replay equals its offline simulation (``parity``): the
analysis reads no runs without it."""


def checkpoints(reg: dict[str, Any]) -> dict[str, str]:
    """The registered checkpoints' paths, each verified against its registered sha256 (relative to the working
    folder, so that runs record no machine's absolute path)."""
    found = {}
    for name, path in reg["checkpoints"].items():
        file = Path(path) if Path(path).is_absolute() else REPO / path
        if not file.is_file() or sha256_hex(file) != reg["sha256"][name]:
            raise DelibError(f"{file} is not the registered {name} checkpoint (sha256 {reg['sha256'][name][:12]}...);"
                             " restore it from the registration commit")
        found[name] = os.path.relpath(file)
    return found


def arms(reg: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every arm's replay settings by its folder name, from the registration ``reg``."""
    limit, ckpt = reg["limit"], checkpoints(reg)
    found: dict[str, dict[str, Any]] = {}
    for k in range(1, limit + 1):
        found[f"self-consistency-{k}"] = {"methods": ("self-consistency",), "agents": k}
        for vote, t in reg["cisc_temperatures"].items():
            found[f"{vote}-{k}"] = {"methods": (vote,), "agents": k, "vote_temperature": t}
    for t in reg["adaptive_thresholds"]:
        found[f"adaptive-{t}"] = {"methods": ("adaptive-consistency",), "agents": limit, "adaptive_threshold": t}
    for w in reg["esc_windows"]:
        found[f"esc-{w}"] = {"methods": ("early-stopping-sc",), "agents": limit, "esc_window": w}
    found["allocate"] = {"methods": ("mpdf-allocate",), "agents": limit, "policy": ckpt["primary"],
                         "stop_at": reg["stop_at"]["primary"]}
    for x in reg["stop_at_grid"]:
        found[f"allocate-{x}"] = {"methods": ("mpdf-allocate",), "agents": limit, "policy": ckpt["primary"],
                                  "stop_at": x}
    found["allocate-deliberate"] = {"methods": ("mpdf-allocate",), "agents": limit, "policy": ckpt["deliberate"],
                                    "stop_at": reg["stop_at"]["deliberate"]}
    found["best-rule"] = {"methods": (reg["best_rule"],), "rounds": 1}
    return found


def add_questions_arg(parser: Parser) -> None:
    """--questions: the test questions a store's arms answer (default: the registered ones; the scripts' tests
    use fewer)."""
    parser.add_argument("--questions", nargs=2, type=int, default=list(QUESTIONS), metavar=("N_GSM8K", "N_MATH"),
                        help=f"first questions of each test store (default: the registered {QUESTIONS[0]} and "
                        f"{QUESTIONS[1]})")


def compare(stores: Path, registration: Path, out: Path, questions: tuple[int, ...] = QUESTIONS,
            command: str = "") -> list[Path]:
    """Replay every arm on each store's first ``questions`` (refused unless the store has built them all at the
    registered samples), each run recording the store relative to the repository root, where it runs (no
    machine's absolute path), and ``command``; returns the descriptive report's files and the episodes table."""
    import torch

    if Path.cwd().resolve() != REPO:
        raise DelibError(f"run experiments/allocation_compare.py from the repository root ({REPO}): its runs record "
                         "the stores' and checkpoints' paths from there")
    torch.set_num_threads(1)  # as the preparation ran: a STOP probability at stop_at's edge is computed alike
    (out / "runs" / PARITY).unlink(missing_ok=True)  # an earlier pass's: written again only if this one passes
    reg = json.loads(registration.read_text())
    every = arms(reg)
    for store in STORES:
        held = open_store(str(stores / store)).manifest.samples
        if held < reg["limit"]:
            raise DelibError(f"{stores / store} holds {held} samples a question, the comparison reads {reg['limit']}: "
                             "finish the stores' extension (data/trees/extend-12.sh), then rerun")
    for store, n in zip(STORES, questions):
        for i, (name, settings) in enumerate(every.items(), start=1):
            print(f"{time.strftime('%H:%M:%S')} {store}: {name} ({i} of {len(every)} arms)",
                  flush=True)  # progress (stdout: stderr holds only an error's one line); a store takes minutes
            evaluate(Replay(trees=os.path.relpath(stores / store), offline=True, questions=n, command=command,
                            **settings),
                     str(out / "runs" / store / name), progress=False)
        parity(stores / store, n, out / "runs" / store, every)
    (out / "runs" / PARITY).write_text(json.dumps(dict(zip(STORES, questions))) + "\n")
    report = write_report([out / "runs"], out / "descriptive", reference=sampling_label(reg["reference_k"]))
    return [*report, write_episodes(out / "runs", list(every), out / EPISODES_TABLE)]


def write_episodes(runs: Path, names: list[str], path: Path) -> Path:
    """The episodes of the registered arms ``names`` under ``runs`` (``<store>/<arm>``, no other folder) as one
    gzipped CSV, a line per arm and question in store, arm and question order: the answer (empty where none was
    extracted), whether it is right, its tokens (prompt + completion, what the analysis counts) and calls. Every
    field quoted, so an answer holding a comma, a quote or a line break reads back whole; byte-identical for
    identical runs (the gzip header holds no time)."""
    text = io.StringIO()
    table = csv.writer(text, lineterminator="\n", quoting=csv.QUOTE_ALL)
    table.writerow(["store", "arm", "example_id", "correct", "final_answer", "prompt_tokens", "completion_tokens",
                    "llm_calls"])
    for store in STORES:
        for name in names:
            for ep in read_episodes(runs / store / name / EPISODES):
                table.writerow([store, name, ep.example_id, int(ep.correct), ep.final_answer, ep.prompt_tokens,
                                ep.completion_tokens, ep.llm_calls])
    path.write_bytes(gzip.compress(text.getvalue().encode(), mtime=0))
    return path


def parity(store_path: Path, n: int, runs: Path, every: dict[str, dict[str, Any]]) -> None:
    """Refuse replays of the allocator's arms that differ on any question from the offline simulation the
    preparation trained and tuned with (``rl/allocation/paths.simulate`` over the same store, the same
    checkpoint and operating point): the same correctness and tokens. It reads what the replays read."""
    from deliberation.allocate.episode import DELIBERATION
    from deliberation.allocate.network import load_allocator
    from deliberation.engine.spec import VoteWeights
    from deliberation.rl.allocation.paths import question_paths, simulate

    store = open_store(str(store_path))
    examples, paths = built_examples(store, None, n), {}
    for name, settings in every.items():
        if settings["methods"] != ("mpdf-allocate",):
            continue
        allocator = load_allocator(settings["policy"]).at(settings["stop_at"])
        vote = allocator.vote
        if vote not in paths:
            paths[vote] = question_paths(store, settings["agents"], vote and VoteWeights(*vote), DELIBERATION,
                                         examples=examples)
        opening = (lambda s: allocator.choose(s, True)) if allocator.net.n_moves == 3 else None
        simulated = {p.example_id: simulate(p, allocator.with_team(p.team), opening) for p in paths[vote]}
        for ep in read_episodes(runs / name / EPISODES):
            want = simulated[ep.example_id]
            if (ep.correct, ep.prompt_tokens + ep.completion_tokens) != (want.correct, want.tokens):
                raise DelibError(f"{runs / name} answers {ep.example_id} otherwise than the allocator's offline "
                                 f"simulation (correct {ep.correct}, tokens {ep.prompt_tokens + ep.completion_tokens}"
                                 f" against {want.correct}, {want.tokens}): the replay and training disagree")


def main(argv: list[str]) -> None:
    parser = Parser(description=__doc__.split("\n")[0])
    parser.add_argument("--stores", default=str(REPO / "data/trees/qwen2.5-coder-1.5b"))
    parser.add_argument("--registration", default=str(REPO / "docs/results/allocation/registered.json"))
    parser.add_argument("--out", default=str(REPO / "docs/results/allocation"))
    add_questions_arg(parser)
    args = parser.parse_args(argv)
    command = shlex.join(["python", "experiments/allocation_compare.py", *argv])
    for path in compare(Path(args.stores), Path(args.registration), Path(args.out), tuple(args.questions), command):
        print(path)


if __name__ == "__main__":
    sys.exit(exit_status(lambda: main(sys.argv[1:])))
