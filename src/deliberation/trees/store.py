"""The tree store: every LLM outcome of a question's deliberation, recorded once, replayable by any method.

A deliberation's requests are functions of the joint history that leads to them (the question, the agents'
texts so far, the round and the agent's seed), so a node is keyed by its request: the response cache's key
(``backends.cache.request_key``), which hashes exactly that. Replaying any method through a
``TreeBackend`` sends the engine's own requests and gets the recorded completions back, so a replayed
episode is the online one by construction (same engine code, same requests, same answers).

Directory layout:
- ``manifest.json`` (``trees.manifest.TreeManifest``): what the outcomes depend on, what the store holds and
  how it was built; a store refuses requests made under other settings, and a build of another selection;
- ``trees.jsonl.gz``: one gzip member per line, ``{"example_id", "nodes": [...]}``, appended as calls
  finish; ``{"example_id", "built": true}`` marks a question whose round 0 and round 1 are complete
  (``delib tree``); nodes replays add later (rounds >= 2 grow lazily) follow. A node:
  ``{"key", "kind", "agent", "completion"}``, ``kind`` one of answer, update, critic (``types.RequestKind``,
  from the request's ``types.Purpose``, which also names the question a node is filed under), ``agent``
  the agent bits of the request's seed (``engine.loop.request_seed``: a RESAMPLE's are its sample's, a
  critic's, seed 0, are 0);
- ``.writer.lock``: locked by the one process appending to the store (``outputs.lock``); readers ignore it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

from deliberation import benchmarks, methods
from deliberation.backends.base import Backend, cache_scope_of, interrupt
from deliberation.backends.cache import request_key
from deliberation.benchmarks.answers import make_backend
from deliberation.benchmarks.selection import load_selected
from deliberation.config import EngineConfig
from deliberation.engine import prompts
from deliberation.errors import DelibError, existing, make_folder, writable_folder
from deliberation.files import append_gzip_line, read_gzip_lines
from deliberation.outputs.kinds import TREE_STORE, TREES, other_kind
from deliberation.outputs.lock import DirectoryLock, lock_directory
from deliberation.trees.manifest import BUILD_ONE, MANIFEST, TreeManifest, read_manifest
from deliberation.types import Completion, Example, GenerationRequest, RequestKind, from_json, purpose_of, to_json

BUSY_FIX = "wait for it to finish, or use another store (replays with --offline only read it)"
"""What to do about a store another process writes (a build, or a replay adding nodes)."""


@dataclass(frozen=True)
class Node:
    """One recorded call: its request key, what it was (answer, update, critic), the agent, the outcome."""

    key: str
    kind: RequestKind
    agent: int
    completion: Completion


@dataclass(frozen=True)
class TreeRow:
    """One line of ``trees.jsonl.gz`` as read back (the writers write it as a plain dict, see ``TreeStore.add``)."""

    example_id: str
    nodes: tuple[Node, ...]
    built: bool = False


def node_of(backend: str, scope: str, request: GenerationRequest, completion: Completion) -> Node:
    """The node recording ``completion`` as the answer to ``request``: its kind as the request's purpose says,
    its agent as every store has recorded it (the seed's agent bits, see the module docstring)."""
    kind = purpose_of(request, "tree store").kind
    return Node(request_key(backend, scope, request), kind, request.seed % 16, completion)


class TreeStore:
    """A store directory opened for reading and appending (thread-safe appends). Only the store's one writer
    appends (``lock``, ``outputs.lock``): a build (``create``), or a replay whose ``TreeBackend`` may add nodes."""

    def __init__(self, path: Path, manifest: TreeManifest, nodes: dict[str, Node], built: set[str],
                 size: int = 0) -> None:
        self.path, self.manifest, self.nodes = path, manifest, nodes
        self.built = built  # questions whose round 0 and round 1 are complete
        self._lock = threading.Lock()
        self._size = size  # of trees.jsonl.gz before it was read: ``lock`` rereads a file that has grown since
        self._writer: DirectoryLock | None = None

    @classmethod
    def create(cls, path: str | Path, manifest: TreeManifest) -> "TreeStore":
        """Open ``path`` for building, as its one writer until ``unlock``: a new store, or an existing one with
        the same settings."""
        path = make_folder(writable_folder(path, "--out"))
        return cls._as_writer(path, lambda: cls._create(path, manifest))

    @classmethod
    def _as_writer(cls, path: Path, read: Callable[[], "TreeStore"]) -> "TreeStore":
        """The store ``read`` returns, read as ``path``'s one writer until ``unlock``: the lock is taken before
        reading, since a repair cuts the file's end."""
        writer = lock_directory(path, BUSY_FIX)
        try:
            store = read()
        except BaseException:
            writer.release()
            raise
        store._writer = writer
        return store

    @classmethod
    def _create(cls, path: Path, manifest: TreeManifest) -> "TreeStore":
        if (path / MANIFEST).exists():
            store = cls.open(path, repair=True)
            if store.nodes:  # a store that holds no node yet never blocks new settings
                store.manifest.check_matches(manifest, path)
                store.resume(manifest)
                return store
        manifest.write(path)
        return cls(path, manifest, {}, set())

    @classmethod
    def open(cls, path: str | Path, repair: bool = False) -> "TreeStore":
        """Read a store; a corrupt manifest or tree file is a one-line DelibError naming it. A torn last
        record (a build killed while appending) is refused, or with ``repair`` (a build resuming) cut off:
        it held only outcomes the build records again."""
        path = existing(path, "tree store", BUILD_ONE, folder=True, inside=MANIFEST)
        other = other_kind(path, TREE_STORE)
        if other is not None:
            raise DelibError(f"{path} holds {other}, not {TREE_STORE}; pass a store `delib tree` built")
        manifest = read_manifest(path)
        size = _size(path / TREES)
        nodes: dict[str, Node] = {}
        built: set[str] = set()
        for row in read_gzip_lines(path / TREES, "delib tree", repair, lambda row: from_json(TreeRow, row)):
            for node in row.nodes:
                nodes.setdefault(node.key, node)
            if row.built:
                built.add(row.example_id)
        return cls(path, manifest, nodes, built, size)

    @classmethod
    def writing(cls, path: str | Path) -> "TreeStore":
        """Open ``path`` as its one writer until ``unlock`` (a replay that records into it): a torn last record,
        left by a writer killed while appending, is cut off, as a build's resume cuts it (it held only nodes of
        questions no run had finished)."""
        return cls._as_writer(Path(path), lambda: cls.open(path, repair=True))

    def lock(self) -> None:
        """Become the store's one writer until ``unlock`` (a DelibError names the process that is), taking in
        what a writer that ended meanwhile added since the store was read; nothing when already held."""
        if self._writer is not None:
            return
        self._writer = lock_directory(self.path, BUSY_FIX)
        if _size(self.path / TREES) != self._size:
            fresh = TreeStore.open(self.path, repair=True)
            self.manifest, self.nodes, self.built, self._size = fresh.manifest, fresh.nodes, fresh.built, fresh._size

    def unlock(self) -> None:
        """Stop being the store's writer (others may then build into it or add nodes)."""
        if self._writer is not None:
            self._writer.release()
            self._writer = None

    def resume(self, wanted: TreeManifest) -> None:
        """A build resuming with ``wanted``: the manifest records the command if it is another
        (``TreeManifest.resumed``)."""
        self._update(self.manifest.resumed(wanted))

    def narrow(self, wanted: TreeManifest) -> None:
        """A build with ``wanted`` is about to add questions, which will hold only what it records: the
        manifest promises no more (``TreeManifest.narrowed``), written before any of them, so that a reader
        (which reads the manifest first) never sees a promise a built question breaks."""
        self._update(self.manifest.narrowed(wanted))

    def complete(self, wanted: TreeManifest) -> None:
        """Every built question now holds what a build with ``wanted`` records: the manifest promises it
        (``TreeManifest.completed``)."""
        self._update(self.manifest.completed(wanted))

    def _update(self, manifest: TreeManifest) -> None:
        if manifest != self.manifest:
            self.manifest = manifest
            manifest.write(self.path)

    def add(self, example_id: str, nodes: Sequence[Node]) -> None:
        """Record ``nodes`` of ``example_id`` durably (one gzip member), skipping keys already held."""
        with self._lock:
            new = list({n.key: n for n in nodes if n.key not in self.nodes}.values())
            if not new:
                return
            append_gzip_line(self.path / TREES, {"example_id": example_id, "nodes": [to_json(n) for n in new]})
            for node in new:
                self.nodes[node.key] = node

    def mark_built(self, example_id: str) -> None:
        """Note that ``example_id``'s round 0 and round 1 are complete (a resumed build skips it)."""
        with self._lock:
            append_gzip_line(self.path / TREES, {"example_id": example_id, "built": True, "nodes": []})
            self.built.add(example_id)


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


class MissingNode(DelibError):
    """An offline TreeBackend was asked for a node its store does not hold."""


class TreeBackend:
    """A backend that answers from a tree store; what it lacks goes to ``inner`` (and is recorded, the store's
    writer lock held from here to ``close``; with ``record`` False it is only passed on, the store only read),
    or, with no ``inner`` (offline, reading only), fails with one line naming the first missing node."""

    def __init__(self, store: TreeStore, inner: Backend | None,
                 missing_hint: str = "rerun without --offline to add it", record: bool = True) -> None:
        self.record = record and inner is not None
        if self.record:
            store.lock()
        self.store, self.inner = store, inner
        self.missing_hint = missing_hint  # how the command at hand adds a missing node (offline)
        self.name = store.manifest.backend
        self.model = store.manifest.model
        self.supports_logprobs = store.manifest.supports_logprobs
        self.cache_scope = store.manifest.scope
        self.calls = 0  # requests sent to ``inner``

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Recorded outcomes come back marked ``cached``; missing ones are generated and recorded first."""
        keys = [request_key(self.name, self.cache_scope, r) for r in requests]
        missing = list(dict.fromkeys(k for k in keys if k not in self.store.nodes))
        fresh = self._expand([requests[keys.index(k)] for k in missing])
        return [fresh[k] if k in fresh else replace(self.store.nodes[k].completion, cached=True) for k in keys]

    def _expand(self, requests: list[GenerationRequest]) -> dict[str, Completion]:
        """Generate ``requests`` with ``inner`` and record them per question: key -> completion."""
        if not requests:
            return {}
        if self.inner is None:
            wanted = purpose_of(requests[0], "tree store")
            recorded = self.store.manifest.recorded
            partial = set(recorded) != set(methods.METHODS)
            only = f"; it records round 1 of {', '.join(recorded)} only" if partial else ""
            raise MissingNode(f"{self.store.path} has no {wanted.kind.value} node of agent {requests[0].agent} for "
                              f"question {wanted.example_id} at round {wanted.round} (offline{only}); "
                              f"{self.missing_hint}")
        self.calls += len(requests)
        nodes = [node_of(self.name, self.cache_scope, r, c) for r, c in zip(requests, self.inner.generate(requests))]
        if self.record:
            filed = [purpose_of(r, "tree store").example_id for r in requests]  # each node under its question
            for example in dict.fromkeys(filed):
                self.store.add(example, [n for e, n in zip(filed, nodes) if e == example])
        return {n.key: n.completion for n in nodes}

    def interrupt(self) -> None:
        if self.inner is not None:
            interrupt(self.inner)

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()
        if self.record:
            self.store.unlock()


def recording_backend(store: TreeStore, cache: str | None,
                      missing_hint: str = "rerun without --offline to add it") -> TreeBackend:
    """A TreeBackend whose misses go to the store's own backend (through ``cache``) and are recorded; the
    store's writer lock is taken before that backend loads, so a store another process writes is refused
    at once."""
    m = store.manifest
    store.lock()
    try:
        inner = make_backend(m.backend, cache=cache, **m.backend_options)
        _check_scope(store, cache_scope_of(inner), inner)
    except BaseException:
        store.unlock()
        raise
    return TreeBackend(store, inner, missing_hint)


def reading_through(store: TreeStore, inner: Backend) -> TreeBackend:
    """A TreeBackend serving the requests ``store`` holds and sending the others to ``inner``
    unrecorded (the store is only read, as another job may be writing it), so that a job asking what a store
    already answered (an optimisation's agents that read no peer send the round-0 requests of its training
    questions) does not generate it again. Refused when ``inner`` answers under another cache scope."""
    _check_scope(store, cache_scope_of(inner), inner)
    return TreeBackend(store, inner, record=False)


def _check_scope(store: TreeStore, scope: str, inner: Backend) -> None:
    """Refuse to record answers of a backend that answers otherwise than the store's did: a changed default
    (openai's plain sampling) or setting gives another cache scope, under which the store's keys are not."""
    if scope != store.manifest.scope:
        inner.close()
        raise DelibError(f"{store.path} was recorded under cache scope {store.manifest.scope!r}, its backend now "
                         f"answers under {scope!r} (a setting or default that changes answers differs, or the store "
                         "predates the scope's naming it; an openai store from before plain sampling needs "
                         "\"sampler\": \"server\" in its manifest's backend_options); replay it --offline or build "
                         "another store")


def split_examples(store: TreeStore, data_dir: str | None) -> list[Example]:
    """Every question of the store's split in its selection's order (the store holds a prefix of them)."""
    m = store.manifest
    return load_selected(benchmarks.get(m.benchmark), m.split, None, m.selection, data_dir)


def built_examples(store: TreeStore, data_dir: str | None, questions: int | None = None,
                   ids: tuple[str, ...] = ()) -> list[Example]:
    """The store's questions: the first N of its split (N = ``questions``, or every built one), every one
    built, and of them those named in ``ids`` when given (a validation fifth). A partial build is refused,
    but the first ``questions`` may be read while later ones are built (a look at a block while the next
    block grows)."""
    m = store.manifest
    examples = split_examples(store, data_dir)
    first = examples[: len(store.built) if questions is None else questions]
    if questions is not None and not {e.id for e in first} <= store.built or len(first) < (questions or 0):
        raise DelibError(f"{store.path} has not built its first {questions} questions yet ({len(store.built)} "
                         "built); wait for the build or ask for fewer")
    if questions is None and (not store.built or {e.id for e in first} != store.built):
        raise DelibError(f"{store.path} holds {len(store.built)} built questions, not the first ones of "
                         f"{m.benchmark}/{m.split}; finish the build by rerunning its `delib tree` command")
    chosen = [e for e in first if not ids or e.id in ids]
    if not chosen and not ids:
        raise DelibError(f"{store.path} has no built question to read yet; wait for the build")
    if not chosen:
        raise DelibError(f"{store.path} holds none of the {len(ids)} questions asked for (e.g. {ids[0]}); pass ids "
                         "of its built questions")
    return chosen


def built_prefix(store: TreeStore, data_dir: str | None) -> int:
    """How many of the store's first questions are built: a build with questions in flight completes them
    out of order, so an interim analysis reads this many (``built_examples(store, data_dir, n)``)."""
    examples = split_examples(store, data_dir)
    return next((i for i, e in enumerate(examples) if e.id not in store.built), len(examples))


def open_store(path: str, writing: bool = False) -> TreeStore:
    """A store whose prompt version this build can still send (``store_prompts`` names the prompt set);
    ``writing``: as its one writer (``TreeStore.writing``)."""
    store = TreeStore.writing(path) if writing else TreeStore.open(path)
    try:
        store_prompts(store)
    except BaseException:
        store.unlock()
        raise
    return store


def store_engine(store: TreeStore, rounds: int, agents: int | None = None, early_stop: bool = True) -> EngineConfig:
    """The engine settings that send the store's requests: its own, but for rounds, team size and early stop."""
    m = store.manifest
    return EngineConfig(agents=m.agents if agents is None else agents, rounds=rounds, temperature=m.temperature,
                        max_tokens=m.max_tokens, seed=m.seed, early_stop=early_stop,
                        verbal_confidence=m.verbal_confidence, prompts=store_prompts(store))


def store_prompts(store: TreeStore) -> str:
    """The name of the prompt set the store was built with."""
    version = store.manifest.prompt_version
    found = [name for name in prompts.PROMPTS if prompts.get(name).version == version]
    if not found:
        raise DelibError(f"{store.path} was built with prompt version {version!r}, which this build cannot "
                         "send; rebuild it with `delib tree`")
    return found[0]
