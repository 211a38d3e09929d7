"""A SQLite response cache in front of any backend (docs/design.md, section Response cache).

Why: rollout collection, counterfactual REFINE outputs and reruns ask the same model the same question
with the same seed many times; a hit costs a primary-key lookup instead of an LLM call.

Key: sha256 of the canonical JSON (sorted keys, no whitespace) of backend name, model, messages, the
sampling parameters (max_tokens, temperature, stop, logprobs, top_logprobs) and the seed. Value: the
``Completion`` as JSON (``types.to_json``).

Concurrency and durability (https://www.sqlite.org/wal.html, https://www.sqlite.org/pragma.html):
WAL journal so readers never block the one writer; ``busy_timeout`` so a writer waits for another
process's short transaction instead of failing; one short transaction per ``generate`` batch with
``INSERT OR IGNORE`` so two processes computing the same key both succeed (the first row wins; with
the same seed both rows are the same anyway). ``synchronous=NORMAL`` in WAL mode keeps every committed
transaction across a killed process (only an OS crash or power loss can drop the last commits).

Integrity: SQLite checks its pages, not the values in them, so a flipped bit in a stored completion used to
change an episode silently or fail in decoding. Each row's text therefore has its SHA-256 in the table
``checksums`` (a table of its own rather than a column, so a process of an older version can keep reading
and writing the same file: its rows just have none). A row whose checksum does not match, or that does not
decode, is damaged: it is never served but deleted and treated as a miss (generated again and stored anew),
with one warning per ``CachedBackend`` naming the file. A row without a checksum (written before they
existed, or by an older version) is served as before. A completion with no content (empty or whitespace
only: a server that failed mid-answer) is returned but never stored, so a rerun asks again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import sqlite3
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from deliberation.backends.base import Backend, cache_scope_of, interrupt
from deliberation.errors import DelibError, make_folder, parse_json, utf8
from deliberation.types import Completion, GenerationRequest, from_json, to_json

CACHE_FILE = "responses.sqlite"
"""The response cache's file name where a command picks it (beside a run or an experiment)."""

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    completion TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS checksums (
    key TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL
)""",
)
_LOOKUP = ("SELECT c.key, CAST(c.completion AS BLOB), s.sha256 FROM completions AS c "
           "LEFT JOIN checksums AS s ON s.key = c.key WHERE c.key IN ({marks})")
"""Rows as raw bytes (a damaged row need not be valid UTF-8) with their checksum, None for a legacy row."""
_INSERT = "INSERT OR IGNORE INTO completions (key, backend, model, completion) VALUES (?, ?, ?, ?)"
_INSERT_CHECKSUM = ("INSERT OR REPLACE INTO checksums (key, sha256) "
                    "SELECT key, ? FROM completions WHERE key = ? AND completion = ?")
"""A checksum is written only for a stored row holding exactly the text it was computed from (another
process may have stored other text under the key first), so it always describes the row."""
_BUSY_TIMEOUT_MS = 60_000  # a writer waits this long for another process's transaction
_MAX_PARAMS = 500  # stay below SQLite's bound on host parameters per statement
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CacheStats:
    """Hit and miss counts of one ``CachedBackend`` since it was opened."""

    hits: int
    misses: int

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


def request_key(backend: str, model: str, request: GenerationRequest) -> str:
    """The cache key of ``request`` sent to ``model`` on ``backend``: sha256 of canonical JSON."""
    payload = {
        "backend": backend,
        "model": model,
        "messages": [[m.role, m.content] for m in request.messages],
        "max_tokens": int(request.max_tokens),
        "temperature": float(request.temperature),  # 0 and 0.0 must give the same key
        "stop": list(request.stop),
        "logprobs": bool(request.logprobs),
        "top_logprobs": int(request.top_logprobs),
        "seed": int(request.seed),
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) the cache database at ``path`` in WAL mode."""
    make_folder(path.parent)
    try:
        conn = sqlite3.connect(str(path), timeout=_BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        with conn:
            for statement in _SCHEMA:
                conn.execute(statement)
    except sqlite3.DatabaseError as err:
        raise unusable(path, err) from err
    return conn


_ELSEWHERE = ("or, in a command that has --cache, pass it another file (or none), then rerun: the responses it holds "
              "are kept")
_SQLITE_CAUSES = {
    sqlite3.SQLITE_FULL: f"no space is left on its disk; free space there, {_ELSEWHERE}",
    sqlite3.SQLITE_IOERR: f"its disk refused a read or write (full, or failing); free space or check it, {_ELSEWHERE}",
    sqlite3.SQLITE_CANTOPEN: "SQLite cannot open it or its journal beside it (a folder in its place, a name too "
                             "long); make its path writable, or, in a command that has --cache, pass it a file you can "
                             "write (or none)",
    sqlite3.SQLITE_READONLY: f"it is read-only; make it writable, {_ELSEWHERE}",
    sqlite3.SQLITE_PERM: f"it is read-only; make it writable, {_ELSEWHERE}",
    sqlite3.SQLITE_BUSY: f"another process has held it for over a minute; wait for that process, {_ELSEWHERE}",
    sqlite3.SQLITE_LOCKED: f"another process has held it for over a minute; wait for that process, {_ELSEWHERE}",
}
"""What each SQLite primary result code means for the cache, and the fix; any other (damage: "database disk
image is malformed", "file is not a database") is fixed by deleting the file (``unusable``). Some commands
fix their cache's path (``delib experiment``'s is in its --out folder; a tree store's own backend uses the
store's), hence "a command that has --cache"."""


def unusable(path: Path, err: sqlite3.DatabaseError) -> DelibError:
    """The one line for a cache SQLite cannot use, by what SQLite says went wrong: a full disk, a file it
    cannot open or write, another process holding it (``_SQLITE_CAUSES``), or damage, whose fix is deleting
    it: the file only saves LLM calls, so that loses nothing a rerun cannot regenerate."""
    cause = _SQLITE_CAUSES.get((getattr(err, "sqlite_errorcode", None) or 0) & 0xFF)
    if cause is not None:
        return DelibError(f"the response cache {path} cannot be used ({err}): {cause}")
    return DelibError(f"the response cache {path} is unusable ({err}); delete it (its responses are generated "
                      "again) or run without a response cache")


class CachedBackend:
    """Wraps ``inner`` so identical requests are answered from a SQLite file at ``path``.

    Hits come back with ``cached=True`` and their stored latency; misses go to ``inner`` in one batch
    (duplicates within a batch are sent once) and are committed before ``generate`` returns.
    Thread-safe within a process (one lock around the connection) and safe across processes (WAL).
    """

    def __init__(self, inner: Backend, path: str | Path) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.model: str = inner.model
        self.supports_logprobs: bool = inner.supports_logprobs
        self.cache_scope: str = cache_scope_of(inner)
        """What the key names as the model (``Backend``): a backend whose model name does not pin the weights
        (an HTTP server serves whatever it loaded under any name) sets its ``cache_scope`` to something that does."""
        self.path = Path(path)
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._conn = connect(self.path)
        self.hits = 0
        self.misses = 0
        self._warned = False  # about damaged rows, once

    @property
    def stats(self) -> CacheStats:
        return CacheStats(hits=self.hits, misses=self.misses)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """One Completion per request, in order; only the misses reach the inner backend."""
        keys = [request_key(self.name, self.cache_scope, r) for r in requests]
        found = self._lookup(keys)
        missing = list(dict.fromkeys(k for k in keys if k not in found))  # unique, in request order
        fresh = self._compute(missing, keys, requests)
        self.hits += sum(k in found for k in keys)
        self.misses += len(keys) - sum(k in found for k in keys)
        return [found[k] if k in found else fresh[k] for k in keys]

    def interrupt(self) -> None:
        """Pass an interrupt on to the inner backend (hits need no stopping)."""
        interrupt(self.inner)

    def close(self) -> None:
        """Close the database and the inner backend."""
        with self._lock:
            self._conn.close()
        self.inner.close()

    # --- internals ---------------------------------------------------------------------------------

    def _compute(
        self, missing: list[str], keys: list[str], requests: Sequence[GenerationRequest]
    ) -> dict[str, Completion]:
        """Send the missing requests to the inner backend in one batch and store the results."""
        if not missing:
            return {}
        by_key = dict(zip(keys, requests))
        completions = self.inner.generate([by_key[k] for k in missing])
        if len(completions) != len(missing):
            raise DelibError(
                f"backend {self.name!r} returned {len(completions)} completions for {len(missing)} "
                "requests; the backend must return one completion per request"
            )
        fresh = dict(zip(missing, completions))
        self._store({k: c for k, c in fresh.items() if c.text.strip()})  # no content: never stored
        return fresh

    def _lookup(self, keys: list[str]) -> dict[str, Completion]:
        """Stored intact completions for those of ``keys`` that are in the cache, marked ``cached=True``;
        damaged rows are discarded (module docstring), so their keys are misses."""
        unique = list(dict.fromkeys(keys))
        rows: list[tuple[str, object, object]] = []
        with self._lock, self._guard():
            conn = self._connection()
            for start in range(0, len(unique), _MAX_PARAMS):
                chunk = unique[start : start + _MAX_PARAMS]
                rows.extend(conn.execute(_LOOKUP.format(marks=",".join("?" * len(chunk))), chunk).fetchall())
        found = {key: _verified(stored, digest) for key, stored, digest in rows}
        damaged = [row for row in rows if found[row[0]] is None]
        if damaged:
            self._discard(damaged)
        return {key: completion for key, completion in found.items() if completion is not None}

    def _discard(self, damaged: list[tuple[str, object, object]]) -> None:
        """Delete the damaged rows exactly as read (a row another process rewrote meanwhile stays), warning
        once per instance."""
        with self._lock, self._guard():
            conn = self._connection()
            with conn:
                conn.executemany("DELETE FROM completions WHERE key = ? AND CAST(completion AS BLOB) IS ?",
                                 [(key, stored) for key, stored, _ in damaged])
                conn.executemany("DELETE FROM checksums WHERE key = ? AND sha256 IS ?",
                                 [(key, digest) for key, _, digest in damaged])
        if not self._warned:
            self._warned = True
            log.warning(f"the response cache {self.path} holds damaged rows (failing their checksum or not "
                        "decoding); they are not served but generated again. If this repeats, check the disk")

    def _store(self, fresh: dict[str, Completion]) -> None:
        """Insert the new completions and their checksums in one short transaction (committed on return)."""
        rows = [(k, self.name, self.model, json.dumps(to_json(c))) for k, c in fresh.items()]
        sums = [(_checksum(text.encode("utf-8")), key, text) for key, _, _, text in rows]
        with self._lock, self._guard():
            conn = self._connection()
            with conn:
                conn.executemany(_INSERT, rows)
                conn.executemany(_INSERT_CHECKSUM, sums)

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """SQLite's errors in a query as one line naming this cache (``unusable``), not a traceback."""
        try:
            yield
        except sqlite3.DatabaseError as err:
            raise unusable(self.path, err) from err

    def _connection(self) -> sqlite3.Connection:
        """The connection of this process; a forked child opens its own (SQLite handles must not
        cross a fork: https://www.sqlite.org/howtocorrupt.html section 2.6)."""
        if os.getpid() != self._pid:
            self._conn = connect(self.path)
            self._pid = os.getpid()
        return self._conn


def _checksum(stored: bytes) -> str:
    """The SHA-256 (hex) of a row's stored text, as its UTF-8 bytes."""
    return hashlib.sha256(stored).hexdigest()


def _verified(stored: object, digest: object) -> Completion | None:
    """The completion a row holds (``cached=True``), or None when the row is damaged: its checksum does not
    match (no checksum: a legacy row, trusted) or its text is no Completion's JSON."""
    if not isinstance(stored, bytes) or (digest is not None and digest != _checksum(stored)):
        return None
    try:
        completion: Completion = from_json(Completion, parse_json(utf8(stored)))
    except (ValueError, TypeError, KeyError, AttributeError, IndexError):  # errors.BadText is a ValueError
        return None
    return dataclasses.replace(completion, cached=True)
