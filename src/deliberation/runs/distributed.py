"""Run a ``RunSpec`` across Ray actors: same run directory (docs/design.md, section Run directories),
same episodes, more machines.

How it works. The driver (this process) validates the spec, opens the run directory and skips the
examples already finished there, exactly as ``runner.execute`` does. It then starts up to ``workers``
actors (``EpisodeWorker``). Each builds its own backend from the spec (``make_backend(spec.backend,
cache=spec.cache, **spec.backend_options)``, e.g. the ``openai`` backend pointed at a llama.cpp server on
its node) and runs one example per call through ``runner.run_example``. The driver hands the next example
to whichever actor is idle, collects results as they finish (``ray.wait``) and is the only writer of
episodes.jsonl: it records each episode as it arrives through the run's output and ``outputs.driver.record_all``,
as a local run does, behind the same progress bar.

Guaranteed:
- Bad input (method, benchmark, split, policy, ``workers``, ``max_retries``, Ray missing, more workers
  than the cluster has CPUs, another run's directory, one another process is writing) fails before anything
  is written; a rerun with nothing left to do does not start Ray at all.
- The run directory has the format of a local run and is resumable by either kind of run. Lines of
  episodes.jsonl are in completion order; summary.json is computed in dataset order, as locally.
- An example's episode is appended at most once (the driver drops a second result for the same id).
- Determinism: an episode depends only on the spec and the example (``runner.example_rng`` and the
  engine's per-request seeds), not on which actor ran it or when, so with a deterministic backend (the
  scripted one; llama.cpp with the same model, build and hardware) a distributed run equals the
  single-process run episode for episode, except ``wall_seconds``.
- Fault tolerance: when an actor dies (its process crashed or was killed, its node went away), the example
  it was running goes to a fresh actor, at most ``max_retries`` times per example. An example that still
  kills its worker is given up; the others finish, then a DelibError names it (a rerun retries only it).

Not guaranteed:
- An exception raised inside an actor by the method or backend (say the server refused a request) is not
  retried: it stops the run and is re-raised, as in a local run. Finished episodes are kept.
- The driver is a single point of failure: if it dies, rerun the command; in-flight examples are redone.
- A hung backend blocks its actor forever (there is no per-example timeout).

On a cluster: install deliberation (with the backend's extra and ``ray``) on every node, with the same
Ray and Python versions, and make every path in the spec (benchmark data, ``--policy``, ``--cache``) valid
on every node; keep the SQLite response cache on a node-local disk (SQLite locking over NFS is
unreliable, https://www.sqlite.org/faq.html#q5). Then::

    ray start --head                                  # on the head node
    ray start --address HEAD_IP:6379                  # on every other node
    delib run ... --workers 8 --ray-address auto      # on the head node

Each actor reserves one CPU, so ``workers`` may not exceed the cluster's CPUs. Without an address a local
Ray with ``workers`` CPUs is started for the run and shut down after it (a Ray already initialized in this
process is used as is). Actors receive the driver's ``DELIB_DATA_DIR`` and ``DELIB_CACHE_DIR``.
"""

from __future__ import annotations

import logging
import os
from collections import Counter, deque
from contextlib import contextmanager, nullcontext
from functools import partial
from pathlib import Path
from typing import Any, Iterator

from deliberation import methods
from deliberation.backends.concurrent import in_flight
from deliberation.benchmarks.answers import make_backend
from deliberation.errors import DelibError, install_hint, require_at_least
from deliberation.outputs.driver import Ledger, pending, record_all
from deliberation.runs.run_config import config_record
from deliberation.runs.runner import Accuracy, RunSpec, run_example, run_output, validate
from deliberation.runs.directory import RunDir, Summary
from deliberation.types import Episode, Example

log = logging.getLogger(__name__)

_OBJECT_STORE_BYTES = 200 * 2**20  # a local Ray's shared memory: it only carries specs and episodes (KBs)
_CLOSE_TIMEOUT_S = 30.0  # how long idle actors get to close their backends (flush caches, stop servers)
_FORWARDED_ENV = ("DELIB_DATA_DIR", "DELIB_CACHE_DIR")  # paths the actors need, made absolute


class EpisodeWorker:
    """The body of one Ray actor: its own backend, one example per call.

    The backend is built on the first call, so a failure to build it surfaces as that call's error (and
    stops the run) instead of as an actor death that would be retried. Subclass it to add behaviour
    (the tests inject crashes this way) and pass the subclass as ``worker_cls``.
    """

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self._method: Any = None
        self._backend: Any = None

    def run(self, example: Example) -> Episode:
        """The episode of ``example``, exactly as ``runner.execute`` would produce it (through ``in_flight``
        too: at ``--concurrency`` above 1 the method sees the same coalescing backend as there)."""
        if self._backend is None:
            self._method = methods.get(self.spec.method)
            self._backend = make_backend(self.spec.backend, cache=self.spec.cache, **self.spec.backend_options)
        one = partial(run_example, self._method, self.spec)
        return next(in_flight(one, [example], self._backend, self.spec.concurrency))

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()


def execute_distributed(spec: RunSpec, out: str, workers: int, ray_address: str | None = None,
                        progress: bool = True, max_retries: int = 2,
                        worker_cls: type[EpisodeWorker] = EpisodeWorker) -> Summary:
    """Run ``spec`` into ``out`` on ``workers`` Ray actors, skipping finished examples; return the summary."""
    _check_counts(workers, max_retries)
    _, examples = validate(spec)
    ray = _import_ray()
    run_dir = RunDir.prepare(out, config_record(spec).to_dict())  # only checks: a refusal below (CPUs) leaves nothing
    todo = pending(examples, run_dir.finished_ids())
    with _ray_session(ray, ray_address, workers) if todo else nullcontext(), \
            run_output(run_dir, spec, [ex.id for ex in examples]) as ledger:
        todo = pending(examples, ledger.done)
        if todo:
            pool = _Pool(ray, worker_cls, spec, min(workers, len(todo)), max_retries)
            _run_all(ledger, pool, todo, progress, run_dir.path)
        return ledger.finish()


def _run_all(ledger: Ledger[Episode, Summary], pool: _Pool, todo: list[Example], progress: bool, out: Path) -> None:
    """Stream ``todo``'s episodes from the actors into the run directory; end the actors in any case."""
    try:
        record_all(ledger, pool.stream(todo), len(todo), Accuracy(), progress)
    finally:
        pool.close()
    _raise_if_given_up(pool.given_up, out)


def _check_counts(workers: int, max_retries: int) -> None:
    require_at_least("--workers", workers)
    require_at_least("max_retries", max_retries, 0)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as err:
        raise DelibError(install_hint("ray", "ray")) from err
    return ray


@contextmanager
def _ray_session(ray: Any, address: str | None, workers: int) -> Iterator[None]:
    """Ray for the run: the one already initialized here, else a new local one or the cluster at
    ``address``; whatever this function initialized it also shuts down (for a cluster: disconnects)."""
    if ray.is_initialized():
        _check_capacity(ray, workers)
        yield
        return
    if address is None:
        # "local": always a new instance; None would join a cluster `ray start` left on this machine
        ray.init(address="local", num_cpus=workers, object_store_memory=_OBJECT_STORE_BYTES,
                 include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    else:
        _connect(ray, address)
    try:
        _check_capacity(ray, workers)
        yield
    finally:
        ray.shutdown()


def _connect(ray: Any, address: str) -> None:
    try:
        ray.init(address=address, log_to_driver=False, ignore_reinit_error=True)
    except ConnectionError as err:
        raise DelibError(f"no Ray cluster at {address!r} ({_last_line(err)}); start one with `ray start --head` and "
                         "pass the address it prints (or auto, on a node of the cluster), or leave out --ray-address "
                         "to run on a local Ray") from err


def _check_capacity(ray: Any, workers: int) -> None:
    """Refuse more actors than CPUs: the extra ones would never be placed and their examples would hang."""
    cpus = ray.cluster_resources().get("CPU", 0)
    if workers > cpus:
        raise DelibError(f"--workers {workers} needs {workers} CPUs but the Ray cluster has {cpus:g}; "
                         "lower --workers or add nodes")


def _worker_env() -> dict[str, str]:
    """The driver's data and model-cache directories, absolute, for the actors' environment."""
    return {k: os.path.abspath(os.environ[k]) for k in _FORWARDED_ENV if os.environ.get(k)}


def _last_line(err: Exception) -> str:
    """The last non-empty line of a (multi-line, remote) error: usually the original exception."""
    return next((line.strip() for line in reversed(str(err).splitlines()) if line.strip()), type(err).__name__)


def _raise_if_given_up(given_up: list[str], out: Path) -> None:
    if given_up:
        shown = ", ".join(given_up[:5]) + (", ..." if len(given_up) > 5 else "")
        raise DelibError(f"{len(given_up)} example(s) kept killing their Ray worker and were given up ({shown}); "
                         f"the other episodes are in {out}: rerun to retry them, and check the Ray worker logs "
                         "(out of memory?)")


class _Pool:
    """The actors, the example in flight on each, and the retry bookkeeping of one distributed run."""

    def __init__(self, ray: Any, worker_cls: type[EpisodeWorker], spec: RunSpec, size: int, max_retries: int) -> None:
        self.ray, self.spec, self.size, self.max_retries = ray, spec, size, max_retries
        self._actor_cls = ray.remote(worker_cls).options(num_cpus=1, max_restarts=0,
                                                         runtime_env={"env_vars": _worker_env()})
        self._deaths = (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError)
        self.idle: list[Any] = []
        self.in_flight: dict[Any, tuple[Any, Example]] = {}  # result ref -> (actor, example)
        self.deaths: Counter[str] = Counter()  # example id -> actors that died running it
        self.given_up: list[str] = []

    def stream(self, todo: list[Example]) -> Iterator[tuple[Example, Episode]]:
        """Examples of ``todo`` with their episodes in completion order; a dead actor's example is requeued
        first in line."""
        queue = deque(todo)
        while queue or self.in_flight:
            self._dispatch(queue)
            answer = self._collect(queue)
            if answer is not None:
                yield answer

    def _dispatch(self, queue: deque[Example]) -> None:
        while queue and len(self.in_flight) < self.size:
            actor = self.idle.pop() if self.idle else self._actor_cls.remote(self.spec)
            example = queue.popleft()
            self.in_flight[actor.run.remote(example)] = (actor, example)

    def _collect(self, queue: deque[Example]) -> tuple[Example, Episode] | None:
        """The next finished result: its example and episode, or None when its actor died (the example is
        handled)."""
        [ref], _ = self.ray.wait(list(self.in_flight), num_returns=1)
        actor, example = self.in_flight.pop(ref)
        try:
            episode = self.ray.get(ref)
        except self._deaths as err:
            if getattr(err, "actor_init_failed", False):  # would fail the same way on every retry
                raise DelibError(f"a Ray worker could not start: {_last_line(err)}; install deliberation and "
                                 "the backend's dependencies on every node") from err
            self._bury(actor, example, err, queue)
            return None
        except self.ray.exceptions.RayTaskError as err:  # the method or backend raised: not a crash
            if err.cause is None:
                raise
            raise err.cause from err
        self.idle.append(actor)
        return example, episode

    def _bury(self, actor: Any, example: Example, err: Exception, queue: deque[Example]) -> None:
        """Drop a dead actor (the next dispatch starts a fresh one); requeue its example or give it up."""
        self.ray.kill(actor)  # an unreachable actor may still be alive: make sure it does no more work
        self.deaths[example.id] += 1
        n = self.deaths[example.id]
        if n > self.max_retries:
            log.error("giving up example %s: %d workers died running it (%s)", example.id, n, type(err).__name__)
            self.given_up.append(example.id)
            return
        log.warning("a Ray worker died running example %s (%s); resubmitting it to a fresh worker "
                    "(retry %d of %d)", example.id, type(err).__name__, n, self.max_retries)
        queue.appendleft(example)

    def close(self) -> None:
        """Let idle actors close their backends, then end every actor (in-flight ones at once)."""
        self.ray.wait([a.close.remote() for a in self.idle], num_returns=len(self.idle), timeout=_CLOSE_TIMEOUT_S)
        for actor in self.idle + [a for a, _ in self.in_flight.values()]:
            self.ray.kill(actor)
        self.idle, self.in_flight = [], {}
