"""The SQLite response cache: hits skip the backend, keys separate what must differ, order is kept,
committed rows survive a SIGKILL, and two processes can write at once."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Sequence

import pytest

from deliberation.backends.cache import CachedBackend, request_key
from deliberation.types import Completion, GenerationRequest, Message

SRC = Path(__file__).resolve().parents[2] / "src"

# A writer process: caches request (tag, seed=i) for i = 0, 1, ... and prints i after each commit.
WRITER = """
import sys
from deliberation.backends.cache import CachedBackend
from deliberation.types import Completion, GenerationRequest, Message

class Echo:
    name, model, supports_logprobs = "fake", "echo", False
    def generate(self, requests):
        return [Completion(f"{r.messages[0].content}/{r.seed}", 3, 2) for r in requests]
    def close(self):
        pass

cache = CachedBackend(Echo(), sys.argv[1])
tag, n = sys.argv[2], int(sys.argv[3])
i = 0
while n < 0 or i < n:
    cache.generate([GenerationRequest(messages=(Message("user", tag),), seed=i)])
    print(i, flush=True)
    i += 1
"""


class CountingBackend:
    """Echoes ``content/seed`` and records every batch it is asked for."""

    name = "fake"
    model = "echo"
    supports_logprobs = False

    def __init__(self) -> None:
        self.batches: list[list[GenerationRequest]] = []
        self.closed = False

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        self.batches.append(list(requests))
        return [Completion(f"{r.messages[0].content}/{r.seed}", 3, 2, latency_s=0.25) for r in requests]

    def close(self) -> None:
        self.closed = True

    @property
    def calls(self) -> int:
        return sum(len(b) for b in self.batches)


def req(content: str = "q", seed: int = 0, temperature: float = 0.7, **kw) -> GenerationRequest:
    return GenerationRequest(messages=(Message("user", content),), seed=seed, temperature=temperature, **kw)


def spawn_writer(db: Path, tag: str, n: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    args = [sys.executable, "-c", WRITER, str(db), tag, str(n)]
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_second_identical_request_makes_no_backend_call(tmp_path: Path) -> None:
    inner = CountingBackend()
    cache = CachedBackend(inner, tmp_path / "c.sqlite")
    first = cache.generate([req()])[0]
    second = cache.generate([req()])[0]
    assert inner.calls == 1
    assert not first.cached and second.cached
    assert second.text == first.text == "q/0"
    assert (second.prompt_tokens, second.completion_tokens, second.latency_s) == (3, 2, 0.25)
    assert (cache.stats.hits, cache.stats.misses) == (1, 1)


def test_cache_has_the_inner_backend_attributes(tmp_path: Path) -> None:
    inner = CountingBackend()
    cache = CachedBackend(inner, tmp_path / "c.sqlite")
    assert (cache.name, cache.model, cache.supports_logprobs) == ("fake", "echo", False)
    cache.close()
    assert inner.closed


def test_different_seed_temperature_messages_or_sampling_miss(tmp_path: Path) -> None:
    inner = CountingBackend()
    cache = CachedBackend(inner, tmp_path / "c.sqlite")
    variants = [
        req(),
        req(seed=1),
        req(temperature=0.0),
        req(content="other"),
        req(max_tokens=7),
        req(stop=("\n",)),
        req(logprobs=True, top_logprobs=5),
    ]
    for v in variants:
        cache.generate([v])
    assert inner.calls == len(variants)
    assert cache.stats.hits == 0


def test_key_depends_on_model_and_backend_and_treats_int_temperature_as_float() -> None:
    base = request_key("fake", "echo", req(temperature=0.0))
    assert base == request_key("fake", "echo", req(temperature=0))
    assert base != request_key("fake", "other-model", req(temperature=0.0))
    assert base != request_key("other-backend", "echo", req(temperature=0.0))


def test_order_preserved_and_misses_sent_in_one_batch(tmp_path: Path) -> None:
    inner = CountingBackend()
    cache = CachedBackend(inner, tmp_path / "c.sqlite")
    cache.generate([req(seed=1), req(seed=3)])
    batch = [req(seed=s) for s in (0, 1, 2, 3, 4, 2)]
    out = cache.generate(batch)
    assert [c.text for c in out] == ["q/0", "q/1", "q/2", "q/3", "q/4", "q/2"]
    assert [c.cached for c in out] == [False, True, False, True, False, False]
    assert [r.seed for r in inner.batches[-1]] == [0, 2, 4]  # one batch, duplicates sent once
    assert len(inner.batches) == 2


def test_cache_persists_across_instances(tmp_path: Path) -> None:
    CachedBackend(CountingBackend(), tmp_path / "c.sqlite").generate([req(seed=5)])
    inner = CountingBackend()
    out = CachedBackend(inner, tmp_path / "c.sqlite").generate([req(seed=5)])
    assert out[0].cached and out[0].text == "q/5"
    assert inner.calls == 0


@pytest.mark.timeout(120)
def test_killed_writer_loses_nothing_committed(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    writer = spawn_writer(db, "k", -1)  # writes until killed
    committed: list[int] = []
    try:
        while len(committed) < 30:
            line = writer.stdout.readline()
            assert line, f"writer exited early: {writer.stderr.read()}"
            committed.append(int(line))
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
    assert writer.returncode == -signal.SIGKILL
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    inner = CountingBackend()
    cache = CachedBackend(inner, db)
    out = cache.generate([req("k", seed=i) for i in committed])
    assert all(c.cached for c in out) and inner.calls == 0
    assert [c.text for c in out] == [f"k/{i}" for i in committed]
    fresh = cache.generate([req("after-kill")])
    assert not fresh[0].cached and cache.generate([req("after-kill")])[0].cached


@pytest.mark.timeout(120)
def test_two_processes_write_concurrently(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    writers = [spawn_writer(db, "shared", 150), spawn_writer(db, "shared", 150), spawn_writer(db, "b", 100)]
    for w in writers:
        _, err = w.communicate(timeout=120)
        assert w.returncode == 0, err
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0] == 250
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_two_servers_serving_one_model_name_do_not_share_answers(tmp_path: Path) -> None:
    """An HTTP server answers under any model name: the cache keys on its cache_scope (the base URL too)."""
    first, second = CountingBackend(), CountingBackend()
    first.cache_scope, second.cache_scope = "echo at http://a/v1", "echo at http://b/v1"
    CachedBackend(first, tmp_path / "c.sqlite").generate([req()])
    CachedBackend(second, tmp_path / "c.sqlite").generate([req()])
    assert (first.calls, second.calls) == (1, 1)
    again = CountingBackend()
    again.cache_scope = "echo at http://a/v1"
    assert CachedBackend(again, tmp_path / "c.sqlite").generate([req()])[0].cached and again.calls == 0


def test_a_damaged_cache_file_is_one_line_naming_it_and_the_way_out(tmp_path: Path) -> None:
    """Garbage in the data pages (the schema page intact): SQLite says "database disk image is malformed" on
    the first lookup, mid-run; the user gets the file and the fix, not a 47-line traceback."""
    from deliberation.errors import DelibError

    path = tmp_path / "c.sqlite"
    cache = CachedBackend(CountingBackend(), path)
    cache.generate([req("x" * 2000, seed=i) for i in range(40)])  # rows over many pages
    cache.close()
    data = bytearray(path.read_bytes())
    data[4096:] = bytes((i * 7 + 3) % 256 for i in range(len(data) - 4096))  # page 1 (the schema) kept
    path.write_bytes(bytes(data))
    damaged = CachedBackend(CountingBackend(), path)
    with pytest.raises(DelibError) as err:
        damaged.generate([req("x" * 2000, seed=1)])
    message = str(err.value)
    assert len(message.splitlines()) == 1 and str(path) in message
    assert "malformed" in message and "delete it" in message and "without a response cache" in message


# --- damaged rows: a checksum per row -------------------------------------------------------------------


def stored_row(path: Path, key: str) -> tuple[bytes, str | None]:
    """The raw stored text of ``key`` and its checksum (None when it has none), read with sqlite3."""
    with sqlite3.connect(path) as conn:
        text = conn.execute("SELECT CAST(completion AS BLOB) FROM completions WHERE key = ?", (key,)).fetchone()[0]
        digest = conn.execute("SELECT sha256 FROM checksums WHERE key = ?", (key,)).fetchone()
    return text, digest and digest[0]


def overwrite(path: Path, key: str, text: bytes | None = None, digest: str | None = None) -> None:
    """Put ``text`` (raw bytes, stored as TEXT as a flipped bit on disk leaves them) or ``digest`` in a row."""
    with sqlite3.connect(path) as conn:
        if text is not None:
            conn.execute("UPDATE completions SET completion = CAST(? AS TEXT) WHERE key = ?", (text, key))
        if digest is not None:
            conn.execute("UPDATE checksums SET sha256 = ? WHERE key = ?", (digest, key))
    conn.close()


def damage_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "deliberation.backends.cache" and "damaged" in
            r.getMessage()]


def test_a_flipped_bit_anywhere_in_a_stored_completion_is_never_served(tmp_path: Path, caplog) -> None:
    path, request = tmp_path / "c.sqlite", req("flip me", seed=3)
    inner = CountingBackend()
    cache = CachedBackend(inner, path)
    cache.generate([request])
    key = request_key("fake", "echo", request)
    original, _ = stored_row(path, key)
    for at in range(len(original)):
        flipped = bytearray(original)
        flipped[at] ^= 1 << (at % 8)
        overwrite(path, key, bytes(flipped))
        out = cache.generate([request])[0]
        assert (out.text, out.cached) == ("flip me/3", False), f"byte {at}"  # generated again, not served
        assert stored_row(path, key)[0] == original  # and stored anew
    assert inner.calls == 1 + len(original)
    assert cache.generate([request])[0].cached and inner.calls == 1 + len(original)
    (warning,) = damage_warnings(caplog)  # once per cache, naming the file
    assert str(path) in warning and "\n" not in warning


def test_a_damaged_checksum_regenerates_the_row_and_heals_it(tmp_path: Path) -> None:
    path, inner = tmp_path / "c.sqlite", CountingBackend()
    cache = CachedBackend(inner, path)
    cache.generate([req()])
    key = request_key("fake", "echo", req())
    text, digest = stored_row(path, key)
    overwrite(path, key, digest=("0" if digest[0] != "0" else "1") + digest[1:])
    assert not cache.generate([req()])[0].cached and inner.calls == 2
    assert stored_row(path, key) == (text, digest)
    assert cache.generate([req()])[0].cached and inner.calls == 2


def test_rows_without_a_checksum_are_served_and_an_older_writer_still_works(tmp_path: Path) -> None:
    """A cache written before checksums (one table, rows of four columns) keeps its answers; a process of the
    older version writing beside this one (its INSERT names no columns) keeps working."""
    path = tmp_path / "c.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE completions (key TEXT PRIMARY KEY, backend TEXT NOT NULL, model TEXT NOT NULL, "
                     "completion TEXT NOT NULL)")
        row = '{"text": "legacy", "prompt_tokens": 1, "completion_tokens": 1}'
        conn.execute("INSERT INTO completions VALUES (?, 'fake', 'echo', ?)", (request_key("fake", "echo", req()), row))
    conn.close()
    inner = CountingBackend()
    cache = CachedBackend(inner, path)
    assert cache.generate([req()])[0].text == "legacy" and inner.calls == 0
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT OR IGNORE INTO completions VALUES (?, 'fake', 'echo', ?)",
                     (request_key("fake", "echo", req(seed=9)), row.replace("legacy", "older")))
    conn.close()
    assert cache.generate([req(seed=9)])[0].text == "older" and inner.calls == 0


@pytest.mark.parametrize("damage", [b'{"tezt": "q/0", "prompt_tokens": 3}', b'{"text": "q/0", "prompt_t', b"\xff\xfe",
                                    b"[1, 2]"])
def test_a_legacy_row_that_does_not_decode_is_generated_again(tmp_path: Path, damage: bytes, caplog) -> None:
    path, inner = tmp_path / "c.sqlite", CountingBackend()
    cache = CachedBackend(inner, path)
    cache.generate([req()])
    key = request_key("fake", "echo", req())
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM checksums")  # as written before checksums existed
    conn.close()
    overwrite(path, key, damage)
    out = cache.generate([req()])[0]
    assert (out.text, out.cached, inner.calls) == ("q/0", False, 2)
    assert len(damage_warnings(caplog)) == 1
