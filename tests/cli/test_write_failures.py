"""When the disk or the file system says no, on every write path (episodes, tree stores, rollout folders,
training outputs, checkpoints, the response cache, writer locks, reports): one ``delib: error:`` line naming
the cause (no space left, a name too long, a folder where a file goes) and the fix, exit status 2, and nothing
torn: an append the disk refused is cut off again, so a rerun goes on from the last whole record. A full disk
is simulated where the bytes are written (half of them reach the file, then ENOSPC), since a test cannot fill
a real disk; SQLite's own page limit fills the cache for real."""

from __future__ import annotations

import errno
import os
import shutil
from collections import namedtuple
from pathlib import Path

import pytest

from deliberation.backends.cache import CachedBackend
from deliberation.cli.main import main
from deliberation.errors import DelibError
from deliberation.files import read_gzip_lines
from deliberation.types import Completion, GenerationRequest, Message

SCRIPTED = ["--backend", "scripted", "--quiet"]
LONG = "n" * 300  # more bytes than any common file system allows in one name (255)


def fill_disk(monkeypatch: pytest.MonkeyPatch, name: str, spare: int, code: int = errno.ENOSPC) -> None:
    """Writes to files called ``name``: the first ``spare`` go through; each later one writes half its bytes and
    then fails with ``code`` (a disk that fills in the middle of an append)."""
    real, done = os.write, [0]

    def write(fd: int, data: bytes) -> int:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(os.sep + name):
            done[0] += 1
            if done[0] > spare:
                real(fd, bytes(data[: len(data) // 2]))
                raise OSError(code, os.strerror(code))
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)


def one_line(capsys: pytest.CaptureFixture) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("delib: error:"), err
    return err


# --- appends: a full disk tears nothing -------------------------------------------------------------------


def test_a_full_disk_while_episodes_are_appended_tears_nothing(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    argv = ["run", "--method", "debate", "--limit", "3", "--out", str(out), *SCRIPTED]
    with monkeypatch.context() as patch:
        fill_disk(patch, "episodes.jsonl", spare=1)
        assert main(argv) == 2
    err = one_line(capsys)
    assert f"cannot write {out / 'episodes.jsonl'}: no space is left on its disk; free space there" in err
    data = (out / "episodes.jsonl").read_bytes()
    assert data.count(b"\n") == 1 and data.endswith(b"\n")  # the first episode, whole; nothing of the second
    assert main(argv) == 0  # space again: the rerun resumes
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 3


@pytest.mark.parametrize(("command", "folder", "name"), [
    (["tree", "--limit", "3", "--samples", "3"], "store", "trees.jsonl.gz"),
    (["collect", "--split", "test", "--allow-test", "--limit", "2", "--joint-actions", "2"], "rollouts",
     "rollouts.jsonl.gz"),
])
def test_a_full_disk_while_a_store_or_rollouts_are_appended_tears_nothing(tmp_path, monkeypatch, capsys, command,
                                                                          folder, name):
    out = tmp_path / folder
    argv = [*command, "--out", str(out), *SCRIPTED]
    with monkeypatch.context() as patch:
        fill_disk(patch, name, spare=1, code=errno.EDQUOT)
        assert main(argv) == 2
    assert f"cannot write {out / name}: your disk quota is used up" in one_line(capsys)
    kept = read_gzip_lines(out / name, "delib")  # no torn member: read whole without repair
    assert len(kept) == 1
    assert main(argv) == 0


def test_a_disk_that_fails_the_sync_keeps_no_half_record(tmp_path, monkeypatch, capsys):
    """The bytes went out but the disk could not make them durable (EIO): the record is taken back."""
    out = tmp_path / "run"
    assert main(["run", "--method", "cot", "--limit", "1", "--out", str(out), *SCRIPTED]) == 0
    size = (out / "episodes.jsonl").stat().st_size
    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(errno.EIO, os.strerror(errno.EIO))))
        assert main(["run", "--method", "cot", "--limit", "2", "--out", str(out), *SCRIPTED]) == 2
    assert "episodes.jsonl: Input/output error; check the disk, then rerun" in one_line(capsys)
    assert (out / "episodes.jsonl").stat().st_size == size


# --- whole files: training outputs, checkpoints, reports ----------------------------------------------------


@pytest.fixture
def rollouts(tmp_path) -> Path:
    out = tmp_path / "rollouts"
    assert main(["collect", "--split", "test", "--allow-test", "--limit", "6", "--joint-actions", "2",
                 "--out", str(out), *SCRIPTED]) == 0
    return out


def test_a_full_disk_while_training_outputs_are_written_leaves_nothing(tmp_path, rollouts, monkeypatch, capsys):
    real = Path.write_text

    def write_text(self: Path, *args, **kwargs):
        if self.name == "metrics.jsonl":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, *args, **kwargs)

    out = tmp_path / "ckpt"
    monkeypatch.setattr(Path, "write_text", write_text)
    assert main(["train", "--algo", "sft", "--rollouts", str(rollouts), "--out", str(out), "--epochs", "1"]) == 2
    assert f"cannot write {out}: no space is left on its disk" in one_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rollouts"]  # no output, no staging folder


def test_a_checkpoint_torch_cannot_write_on_a_full_disk_is_named(tmp_path, monkeypatch):
    """torch reports a failed write as a RuntimeError without its cause; a disk with no space left is named."""
    import torch

    from deliberation.policy import checkpoint
    from deliberation.policy.network import MetaPolicyNet

    def fail(obj, path):
        Path(path).write_bytes(b"half a checkpoint")
        raise RuntimeError("[enforce fail at inline_container.cc:672] . PytorchStreamWriter failed writing file")

    monkeypatch.setattr(torch, "save", fail)
    monkeypatch.setattr(shutil, "disk_usage", lambda p: namedtuple("Usage", "total used free")(100, 100, 0))
    with pytest.raises(DelibError, match="policy.pt: no space is left on its disk"):
        checkpoint.save_policy(tmp_path / "policy.pt", MetaPolicyNet(4), ["a", "b", "c", "d"], 1, {})
    assert list(tmp_path.iterdir()) == []  # the temporary file is gone


def test_a_full_disk_while_a_model_is_assembled_leaves_no_part_file(tmp_path, monkeypatch):
    from deliberation.backends import catalogue

    parts = [tmp_path / "part1", tmp_path / "part2"]
    for i, part in enumerate(parts):
        part.write_bytes(bytes([i]) * 1000)
    spec = catalogue.ModelSpec("m", "test", ("m1", "m2"), "1.0", "0" * 64, 2000)
    real = os.fdopen

    class Full:
        """A file on a disk with no space left: every write is refused."""

        def __init__(self, fd: int, mode: str) -> None:
            self.file = real(fd, mode)

        def __enter__(self) -> "Full":
            return self

        def __exit__(self, *exc: object) -> None:
            self.file.close()

        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fdopen", Full)
    dest = tmp_path / "models" / "m.gguf"
    with pytest.raises(DelibError, match="m.gguf: no space is left on its disk"):
        catalogue.assemble(spec, parts, dest, progress=False)
    assert list(dest.parent.iterdir()) == []


def test_a_folder_where_a_report_file_goes_is_named(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--method", "cot", "--limit", "1", "--out", str(out), *SCRIPTED]) == 0
    (tmp_path / "rep" / "report.md").mkdir(parents=True)
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 2
    err = one_line(capsys)
    assert f"cannot write {tmp_path / 'rep' / 'report.md'}: a folder stands where the file goes" in err
    assert not (tmp_path / "rep" / "report.md.tmp").exists()


# --- the response cache ---------------------------------------------------------------------------------------


class Echo:
    name, model, supports_logprobs = "echo", "m", False

    def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        return [Completion(r.messages[0].content, 3, 1) for r in requests]

    def close(self) -> None:
        pass


def ask(text: str) -> GenerationRequest:
    return GenerationRequest(messages=(Message("user", text),))


def test_a_full_cache_disk_is_named_and_the_cache_is_not_called_damaged(tmp_path):
    cache = CachedBackend(Echo(), tmp_path / "c.sqlite")
    cache.generate([ask(f"{i} " * 500) for i in range(5)])
    pages = cache._conn.execute("PRAGMA page_count").fetchone()[0]
    cache._conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own limit: SQLITE_FULL, as a full disk
    with pytest.raises(DelibError) as err:
        cache.generate([ask("x" * 200_000)])
    message = str(err.value)
    assert "no space is left on its disk" in message and "has --cache, pass it another file" in message
    assert "delete it" not in message and "\n" not in message
    assert cache.generate([ask("0 " * 500)])[0].cached  # what it holds is still served


# --- names and locks -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["tree", "--limit", "1", *SCRIPTED, "--out", LONG],
    ["collect", "--limit", "1", *SCRIPTED, "--out", f"deep/{LONG}"],
    ["train", "--rollouts", "r", "--out", LONG],
    ["run", "--method", "cot", "--limit", "1", *SCRIPTED, "--out", "o", "--cache", f"{LONG}.sqlite"],
])
def test_a_name_longer_than_the_file_system_allows_is_refused_before_anything_runs(refused, argv):
    assert "more than the 255 this file system allows for one name; choose a shorter name" in refused(*argv)


def test_a_path_longer_than_the_file_system_allows_is_refused(refused):
    assert "bytes this file system allows for a path" in refused("tree", *SCRIPTED, "--out", "d/" * 2100 + "x")


@pytest.mark.parametrize("command", [["tree", "--limit", "1"], ["collect", "--limit", "1"],
                                     ["run", "--method", "cot", "--limit", "1"]])
def test_a_writer_lock_that_is_a_folder_is_named(refused, here, command):
    (here / "out" / ".writer.lock").mkdir(parents=True)
    err = refused(*command, *SCRIPTED, "--out", "out")
    assert "out/.writer.lock is a folder, so no writer can lock out; remove it (rmdir" in err
