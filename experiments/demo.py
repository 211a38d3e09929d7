"""`make demo`: what only this project does, in a few minutes once set up (README 'Two commands').

1. live: one short question answered now by the tree store's model with mpdf (`delib ask`): each agent's
   round-0 answer and confidence, then the meta-action the learned policy chose for it in round 1 (persist,
   refine, concede). --no-early-stop shows round 1 even when the agents agree; --max-tokens keeps it short.
2. replay: every method the committed GSM8K test store replays offline, at one round (`delib evaluate
   --offline`): no model runs, and each episode is the one `delib run` would generate (same requests,
   recorded answers). The store's 300 questions are test questions that neither the learned policy nor the
   best fixed rule saw (checked: ``report/compare.check_held_out``); GSM8K test ships in a data package, so
   no data folder is needed.
3. report (`delib report --trees --reference`): the headline's paired table, each method paired question by
   question with the best fixed rule (tuned on the training trees, docs/results/paired/best_rule.json) and
   with self-consistency at its own token budget, differences with their 95% intervals; and the figures.
4. the `delib run` line that generates the mpdf row live, on the same questions with the same settings.

    python experiments/demo.py [--out runs/demo] [--trees STORE] [--ask-backend scripted]

Outputs go to OUT: ask.sqlite (the live question's responses), replay/ (a run directory per method) and
report/ (report.md holds every table in full). Rerunning resumes: the replays skip finished questions, and
the live answer comes from ask.sqlite.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from deliberation.cli.main import main as delib
from deliberation.errors import DelibError
from deliberation.report.columns import text_table
from deliberation.report.compare import Comparison, check_held_out
from deliberation.report.compare_plot import PAIRED_PNG, plotted
from deliberation.report.paired import POOLED, Paired, diff_points
from deliberation.runs.directory import CONFIG
from deliberation.runs.run_config import read_run_config
from deliberation.runs.tune_rules import read_best_rule
from deliberation.trees.build import replayable
from deliberation.trees.manifest import read_manifest
from deliberation.trees.store import TreeStore, built_examples

from looks.record import counts, read_paired

STORE = "data/trees/qwen2.5-coder-1.5b/gsm8k-test"
"""The held-out store the demo replays: the paired experiment's GSM8K test questions (its look 3 read all 300)."""
POLICY = "qwen2.5-coder-1.5b-trees"
"""mpdf's policy: the headline's learned arm, trained on the 1.5B model's training trees only (its split.json
beside it lists them)."""
RULE = "docs/results/paired/best_rule.json"
"""The reference: the best fixed rule of `delib tune-rules` on the training trees, as in the headline."""
QUESTION = "A shop sells pens at 3 for 2 dollars. What do 12 pens cost?"
ASK_MAX_TOKENS = 512  # room for a worked answer (192 cut answers short: wrong extractions); ~40 s on 2 cores
ROUNDS = 1  # every round-1 node is in the store, so every replay is exact and offline
FIGURES = ("accuracy_vs_tokens.png", PAIRED_PNG)
HEADER = ("method", "n", "acc %", "vs best rule [95% CI]", "p", "vs self-consistency, equal tokens [95% CI]",
          "tokens/q")
TABLE_NOTE = ("Differences in accuracy points, each method paired question by question (paired bootstrap 95% "
              "intervals; p: exact McNemar against the best rule). Self-consistency at equal tokens: the majority "
              "vote of k samples, k the largest whose tokens a question stay within the method's.")


def ask(out: Path, trees: str, backend: str | None) -> None:
    """The live question, with the store's model and backend (``backend`` replaces the backend: tests)."""
    manifest = read_manifest(Path(trees))
    _step(f"1. one question answered now by {manifest.model} with mpdf: round 0, then each agent's "
          "meta-action in round 1")
    _run(["ask", QUESTION, "--method", "mpdf", "--policy", POLICY, "--backend", backend or manifest.backend,
          "--model", manifest.model, "--max-tokens", str(ASK_MAX_TOKENS), "--rounds", str(ROUNDS),
          "--no-early-stop", "--cache", str(out / "ask.sqlite")])


def methods_of(trees: str) -> tuple[str, ...]:
    """Every method the store ``trees`` replays offline (``trees.build.replayable``): the 1.5B stores, built
    with --methods mpdf, leave out debate, reconcile and dylan, whose update prompts they do not record."""
    return replayable(read_manifest(Path(trees)).recorded)


def held_out(trees: str) -> str:
    """The line saying whose questions ``trees`` holds; exits when the policy trained on one of them or the
    rule was tuned on one (``check_held_out`` reads the policy's split.json and the rule's tuning stores)."""
    try:
        check_held_out(Comparison(trees=(trees,), rule=RULE, policies=(POLICY,)))
    except DelibError as err:
        sys.exit(f"demo: {err}")
    store = TreeStore.open(trees)
    return (f"Its {len(store.built)} questions are {store.manifest.benchmark} {store.manifest.split} questions the "
            f"policy ({POLICY}) never saw, nor the best rule: both were fitted on training questions only.")


def replay(out: Path, trees: str) -> None:
    """Every method the store replays offline, replayed from ``trees`` into ``out/replay/<method>``."""
    names = methods_of(trees)
    _step(f"2. {len(names)} methods replayed offline from {trees} (no model runs)")
    print(held_out(trees), flush=True)
    _run(["evaluate", "--trees", trees, "--offline", "--quiet", "--rounds", str(ROUNDS), "--method",
          ",".join(names), "--policy", POLICY, "--out", str(out / "replay")])


def report(out: Path, trees: str) -> list[Path]:
    """The report of the replays into ``out/report``, against the best rule; prints the paired table and
    returns the figures' paths."""
    reference = read_best_rule(Path(RULE)).label
    _step(f"3. paired with the best fixed rule ({reference}) and with self-consistency at equal tokens")
    folder = out / "report"
    _run(["report", str(out / "replay"), "--trees", trees, "--reference", reference, "--out", str(folder)])
    paired = read_paired(folder / "paired.json")
    print(paired_table(paired, counts(folder / "report.csv"), f"mpdf [{POLICY}]"))
    print(f"\n{TABLE_NOTE}\nEvery table in full: {folder / 'report.md'}")
    figures = [folder / name for name in FIGURES if (folder / name).exists()]
    print("".join(f"figure: {path}\n" for path in figures).rstrip())
    return figures


def paired_table(paired: Sequence[Paired], cells: dict[str, dict[str, Any]], learned: str) -> str:
    """The headline's table in fixed-width columns: each method's n, accuracy, paired difference to the best
    rule with its interval and McNemar p, to self-consistency at equal tokens (with its k), and tokens a
    question; pooled over the benchmarks when there are several (``plotted``: the pooled rows, else the one
    benchmark's). ``cells`` is ``look.counts`` of report.csv; ``learned`` first, then by accuracy."""
    rows = plotted(paired)
    fixed = {p.label: p for p in rows if p.budget is None}
    equal = {p.label: p for p in rows if p.budget is not None}
    pooled = {label: by_column[POOLED] for label, by_column in cells.items()}
    share = {label: cell["correct"] / max(cell["n"], 1) for label, cell in pooled.items()}
    order = sorted(pooled, key=lambda label: (label != learned, -share[label], label))
    references = {p.reference for p in fixed.values()}
    lines = [[label, str(int(pooled[label]["n"])), f"{100 * share[label]:.1f}",
              *(["reference", ""] if label in references else _against(fixed.get(label))),
              _equal(equal.get(label)), f"{pooled[label]['tokens_per_question']:.0f}"] for label in order]
    return text_table([list(HEADER), *lines], right=range(1, len(HEADER)))


def _against(row: Paired | None) -> list[str]:
    """The difference to the best rule and McNemar p ("-" for a row not paired with it)."""
    return ["-", ""] if row is None else [diff_points(row.accuracy_diff, row.accuracy_diff_ci95),
                                          f"{row.mcnemar_p:.3g}"]


def _equal(row: Paired | None) -> str:
    """The difference to self-consistency at the row's budget, and its k; "-" where there is none
    (self-consistency itself, or a method cheaper than one sample)."""
    if row is None:
        return "-"
    return f"{diff_points(row.accuracy_diff, row.accuracy_diff_ci95)} k={'/'.join(map(str, row.budget or ()))}"


def live_command(run: Path, out: Path) -> str:
    """The `delib run` line that generates the replayed run ``run`` live: its method, policy, questions and
    settings."""
    spec = read_run_config(run / CONFIG).spec
    engine, options = spec.engine, dict(spec.backend_options)
    model = options.pop("model", None)  # a backend option, but with a flag of its own
    words = ["delib", "run", "--method", spec.method, "--benchmark", spec.benchmark, "--split", spec.split,
             "--limit", str(spec.limit), "--backend", spec.backend]
    words += ["--model", model] * (model is not None) + ["--policy", str(spec.policy)] * bool(spec.policy)
    words += [w for key, value in sorted(options.items()) for w in ("--backend-opt", f"{key}={value}")]
    words += [w for key in ("agents", "rounds", "max_tokens", "temperature", "seed", "prompts")
              for w in (f"--{key.replace('_', '-')}", str(getattr(engine, key)))]
    words += ["--no-early-stop"] * (not engine.early_stop) + ["--verbal-confidence"] * engine.verbal_confidence
    return " ".join(words + ["--out", str(out)])


def loadable(trees: str) -> str:
    """``trees`` when its built questions load here (a data folder, the package that ships them, the hub);
    exits naming why not."""
    try:
        built_examples(TreeStore.open(trees), None)
    except DelibError as err:
        sys.exit(f"demo: no tree store to replay here: {trees}: {err}")
    return trees


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
    parser.add_argument("--trees", default=STORE, help=f"tree store to replay (default {STORE})")
    parser.add_argument("--ask-backend", help="backend of the live question (default: the store's)")
    args = parser.parse_args()
    demo(Path(args.out), loadable(args.trees), args.ask_backend)
