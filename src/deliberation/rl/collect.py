"""``delib collect``: run the rollout collector over a benchmark split into a rollout directory.

Resumable: questions already in the file are skipped; a second collection into a directory while one writes
it is refused. The behaviour policy is an epsilon-mixed policy checkpoint (``--policy``) or, before any
policy exists, the epsilon-mixed agreement-threshold rule.
"""

from __future__ import annotations

from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Iterator

from deliberation import benchmarks
from deliberation.backends.base import Backend
from deliberation.benchmarks.answers import make_backend
from deliberation.benchmarks.selection import load_selected
from deliberation.config import LearningWorkload, require_draws
from deliberation.engine.loop import example_rng, make_context
from deliberation.engine.spec import MetaPolicy, MethodSpec
from deliberation.engine.state import FEATURE_NAMES, FEATURE_VERSION
from deliberation.engine.team_checks import check_team
from deliberation.errors import DelibError, require_at_least
from deliberation.files import append_gzip_line
from deliberation.outputs.driver import Ledger, QuestionJob, note_unasked, run_job
from deliberation.outputs.lock import refuse_if_locked
from deliberation.policy.epsilon import EpsilonMixed
from deliberation.policy.rules import AgreementThreshold
from deliberation.rl import rollout_files as files
from deliberation.rl.rollouts import collect_question, collecting
from deliberation.types import Decision, Example, formerly, to_json


@dataclass(frozen=True)
class CollectSpec(LearningWorkload):
    """What to collect; saved (with the command) in manifest.json."""

    learns = ("train the policy on the questions it is evaluated on", "collect")

    joint_actions: int = field(default=8, metadata=formerly("samples"))
    """K joint actions drawn per decision point: the group whose rewards SoftRankPO ranks."""
    epsilon: float = 0.2
    """Probability of replacing the behaviour policy's action by a uniform one."""
    policy: str | None = None
    """Behaviour policy checkpoint (a path or a shipped name); default: the agreement-threshold rule."""

    def __post_init__(self) -> None:
        super().__post_init__()
        require_draws("--joint-actions", self.joint_actions, 2, "to rank rewards within a group")
        require_at_least("--rounds", self.engine.rounds, 1, "to collect a decision (round 0 takes none)")
        check_team("delib collect", self.engine, "")  # it collects deliberation: no single-agent method
        if not 0.0 < self.epsilon <= 1.0:
            raise DelibError(f"--epsilon must be in (0, 1] (got {self.epsilon}): the behaviour policies are "
                             "deterministic, so without exploration the K joint actions are the same: "
                             "nothing to rank")


def behaviour_policy(spec: CollectSpec) -> MetaPolicy:
    if spec.policy is None:
        return EpsilonMixed(AgreementThreshold(), spec.epsilon)
    from deliberation.policy.checkpoint import load_learned

    return EpsilonMixed(load_learned(spec.policy), spec.epsilon)


def manifest(spec: CollectSpec, model: str) -> files.RolloutManifest:
    """The manifest of collecting ``spec`` with ``model``: every setting of the spec, the engine's seed, agents
    and rounds besides, and this build's features."""
    record = to_json(spec)
    record.update(model=model, seed=spec.engine.seed, agents=spec.engine.agents, rounds=spec.engine.rounds,
                  feature_version=FEATURE_VERSION, feature_names=list(FEATURE_NAMES))
    return files.manifest_of(record)


def collect(spec: CollectSpec, out: str, progress: bool = True) -> int:
    """Collect rollouts into ``out`` as its one writer (another collection into it is refused before the model
    loads); returns the number of questions in the file."""
    examples = load_selected(benchmarks.get(spec.benchmark), spec.split, spec.limit, spec.selection, spec.data_dir)
    behaviour = behaviour_policy(spec)
    directory = Path(out)
    refuse_if_locked(directory)
    files.check_collection(directory, manifest(spec, model=""))
    job = QuestionJob(examples, lambda: closing(make_backend(spec.backend, cache=spec.cache, **spec.backend_options)),
                      partial(_rollouts, spec, directory), partial(_collect_one, spec, collecting(behaviour)),
                      spec.concurrency)
    held = run_job(job, progress)  # every question asked is in the file now: the rest came from before
    note_unasked(out, held - len(examples), "training reads them all")
    return held


def _collect_one(spec: CollectSpec, method: MethodSpec, example: Example, backend: Backend) -> list[Decision]:
    """The decisions of one question, as the engine's loop under the behaviour policy meets them."""
    ctx = make_context(example, backend, benchmarks.get(spec.benchmark), spec.engine, method)
    return collect_question(ctx, spec.joint_actions, example_rng(spec.engine.seed, example.id))


@contextmanager
def _rollouts(spec: CollectSpec, directory: Path, backend: Backend) -> Iterator[Ledger[list[Decision], int]]:
    """The rollout file as the collection's output: the directory locked, its manifest written or checked (a
    resume that adds a question records its settings there), a torn last line (a collection killed mid-append)
    cut off; a line per question; the count of questions."""
    path, wanted = directory / files.ROLLOUTS, manifest(spec, backend.model)
    with files.open_collection(directory, wanted):
        done = frozenset(row.example_id for row in files.read_rows(path, repair=True))
        resume = files.resumed(directory, wanted)

        def record(example: Example, decisions: list[Decision]) -> None:
            append_gzip_line(path, files.question_row(backend.model, spec.benchmark, spec.split, example.id,
                                                      decisions))
            resume.write_once()

        yield Ledger(done, record, lambda: len(files.read_rows(path)))
