"""Run one method on one benchmark split into a run directory, resumably, with a progress bar.

Everything that can be wrong with the request (method, benchmark, split, policy file, engine settings)
is checked before the directory is created, so bad input leaves nothing behind.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, closing, contextmanager, nullcontext
from dataclasses import replace
from functools import partial
from typing import Iterator

from deliberation import benchmarks, methods
from deliberation.backends import check_options, context_window, records_summaries, team_size
from deliberation.backends.base import Backend
from deliberation.backends.team import agent_models
from deliberation.benchmarks.answers import make_backend
from deliberation.benchmarks.selection import load_selected
from deliberation.engine import prompts
from deliberation.engine.loop import example_rng
from deliberation.engine.spec import MethodSpec
from deliberation.engine.team_checks import check_context, check_models, check_team
from deliberation.errors import DelibError
from deliberation.methods.base import Method
from deliberation.outputs.driver import Ledger, QuestionJob, note_unasked, pending, run_job
from deliberation.runs.directory import RunDir, Summary, summarize
from deliberation.runs.run_config import RunSpec, config_record
from deliberation.types import Episode, Example


def validate(spec: RunSpec) -> tuple[Method, list[Example]]:
    """The method and the examples, or a DelibError before anything is written."""
    method = method_entry(spec)
    bench = benchmarks.get(spec.benchmark)
    check_options(spec.backend, spec.backend_options)
    prompts.get(spec.engine.prompts)  # an unknown prompt set, named before config.json is written
    examples = load_selected(bench, spec.split, spec.limit, spec.selection, spec.data_dir)
    engine = method.engine(spec.engine)
    check_team(spec.method, engine)
    check_models(spec.method, engine, team_size(spec.backend, spec.backend_options))
    check_context(spec.method, engine, {f"question {ex.id}": bench.format_question(ex) for ex in examples},
                  context_window(spec.backend, spec.backend_options), method.shown(spec.method_config()))
    check_summaries(spec, method.spec(spec.method_config()))  # e.g. a missing mpdf checkpoint fails here
    method.check(spec.method_config(), examples)  # e.g. an optimised graph refuses its training questions
    return method, examples


def check_summaries(spec: RunSpec, method_spec: MethodSpec) -> None:
    """Refuse a live run of a method that reads log-probability summaries on a backend that records none with
    these options: its votes or features would go without them, silently (a CISC vote by log-probability
    becomes a plain vote). A replay reads what its store recorded (stores built before summaries existed, or
    with such a backend, hold none: absent, as in a run)."""
    if spec.trees or not method_spec.reads_summaries or records_summaries(spec.backend, spec.backend_options):
        return
    raise DelibError(f"{spec.method} reads each answer's token log-probability summary, which backend {spec.backend} "
                     "does not record with these options; use llamacpp, hf or vllm (0.10 or later, installed, "
                     "without --backend-opt summaries=false), or openai with --backend-opt summaries=true")


def method_entry(spec: RunSpec) -> Method:
    """The method ``spec`` names, refusing an option it does not read (not ignoring it)."""
    methods.refuse_unread(spec.given(), (spec.method,))
    return methods.get(spec.method)


def run_example(method: Method, spec: RunSpec, example: Example, backend: Backend) -> Episode:
    """The episode of ``example`` (the unit of work of local and distributed runs): it depends on the spec and
    the example only, not on when or where it runs."""
    return method.run(example, backend, spec.method_config(), example_rng(spec.engine.seed, example.id))


def execute(spec: RunSpec, out: str, progress: bool = True, backend: Backend | None = None) -> Summary:
    """Run ``spec`` into ``out`` as its one writer, skipping examples already finished there; return the
    summary. Nothing is written before the backend is built: a model that fails to load leaves no config.json
    behind."""
    method, examples = validate(spec)
    run_dir = RunDir.prepare(out, config_record(spec).to_dict())
    order = [ex.id for ex in examples]
    if not pending(examples, run_dir.finished_ids()):  # finished: no model to load, no empty progress bar
        with run_dir.create():
            return finish(run_dir, spec, order)
    job = QuestionJob(examples, partial(_backend, spec, backend), lambda _: run_output(run_dir, spec, order),
                      partial(run_example, method, spec), spec.concurrency, Accuracy())
    return run_job(job, progress)


def _backend(spec: RunSpec, given: Backend | None) -> AbstractContextManager[Backend]:
    """The caller's backend, left open (an experiment's cells share it), else a new one, closed after the run."""
    if given is not None:
        return nullcontext(given)
    return closing(make_backend(spec.backend, cache=spec.cache, **spec.backend_options))


@contextmanager
def run_output(run_dir: RunDir, spec: RunSpec, order: list[str]) -> Iterator[Ledger[Episode, Summary]]:
    """``run_dir`` as a run's output: this process its one writer (its episodes read again, locked: a run
    that ended meanwhile may have added some), one line of episodes.jsonl per episode, summarized at the end."""
    with run_dir.create():
        run_dir.clear_summary()  # an extension killed midway must not keep reporting the old summary
        yield Ledger(frozenset(run_dir.finished_ids()), lambda _, episode: run_dir.append(episode),
                     partial(finish, run_dir, spec, order))


class Accuracy:
    """The progress bar's postfix of a run: accuracy and tokens per question over the episodes so far."""

    def __init__(self) -> None:
        self.done = self.right = self.tokens = 0

    def __call__(self, episode: Episode) -> dict[str, str]:
        self.done, self.right = self.done + 1, self.right + episode.correct
        self.tokens += episode.prompt_tokens + episode.completion_tokens
        return {"acc": f"{self.right / self.done:.3f}", "tok_per_q": f"{self.tokens / self.done:.0f}"}


def finish(run_dir: RunDir, spec: RunSpec, order: list[str]) -> Summary:
    """Write summary.json over every episode in the directory, so that it always describes episodes.jsonl (a
    rerun with a smaller --limit counts the episodes it did not ask for too), in dataset order: ``order``,
    then episodes of examples it does not name."""
    rank = {eid: i for i, eid in enumerate(order)}
    episodes = sorted(run_dir.episodes(), key=lambda e: rank.get(e.example_id, len(rank)))
    note_unasked(run_dir.path, sum(e.example_id not in rank for e in episodes), "its summary counts them too")
    summary = replace(summarize(episodes, spec.method, spec.benchmark, spec.split,
                                agent_models(spec.backend, spec.backend_options)),
                      optimisation_tokens=methods.get(spec.method).optimised(spec.method_config()))
    run_dir.write_summary(summary)
    return summary
