"""The offline model catalogue: lookup errors, part discovery, assembly, sha256 refusal, resolve."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from deliberation.backends import catalogue as models
from deliberation.errors import DelibError
from deliberation.backends.catalogue import ModelSpec

PARTS = (b"GGUF-first-part|", b"second-part|", b"third")


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own empty cache directory."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("DELIB_CACHE_DIR", str(cache))
    return cache


def fake_spec(sha256: str | None = None) -> ModelSpec:
    digest = sha256 or hashlib.sha256(b"".join(PARTS)).hexdigest()
    return ModelSpec("fake-model", "test", ("fake-model-part1", "fake-model-part2", "fake-model-part3"),
                     "1.0", digest, sum(map(len, PARTS)))


def install_fake_part(site: Path, index: int, version: str = "1.0") -> None:
    """Write a part package's data file plus the dist-info importlib.metadata reads (no pip)."""
    module = f"fake_model_part{index}"
    rel = f"{module}/data/part{index:02d}.bin"
    (site / module / "data").mkdir(parents=True)
    (site / rel).write_bytes(PARTS[index - 1])
    info = site / f"{module}-{version}.dist-info"
    info.mkdir()
    metadata = f"Metadata-Version: 2.1\nName: fake-model-part{index}\nVersion: {version}\n"
    (info / "METADATA").write_text(metadata)
    (info / "RECORD").write_text(f"{module}/__init__.py,,\n{rel},,\n{info.name}/METADATA,,\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    return site


def test_unknown_name_lists_valid_names() -> None:
    with pytest.raises(DelibError) as err:
        models.resolve("no-such-model")
    for spec in models.catalogue():
        assert spec.name in str(err.value)


def test_missing_model_names_exact_pull_command() -> None:
    with pytest.raises(DelibError, match=r"delib models pull qwen2\.5-coder-0\.5b$"):
        models.resolve("qwen2.5-coder-0.5b", locate=lambda spec: (None,) * len(spec.packages))


def test_locate_finds_installed_parts_and_ignores_other_versions(site: Path) -> None:
    install_fake_part(site, 1)
    install_fake_part(site, 2, version="0.9")
    found = models.locate_installed(fake_spec())
    assert found[0] == site / "fake_model_part1" / "data" / "part01.bin"
    assert found[1:] == (None, None)


def test_assemble_concatenates_parts_in_order(site: Path) -> None:
    for i in (1, 2, 3):
        install_fake_part(site, i)
    path = models.materialize(fake_spec())
    assert path == models.assembled_path(fake_spec())
    assert path.read_bytes() == b"".join(PARTS)
    assert models.spec_status(fake_spec()).path == path
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left behind


def test_sha256_mismatch_is_refused_and_removed(site: Path) -> None:
    for i in (1, 2, 3):
        install_fake_part(site, i)
    bad = fake_spec(sha256="0" * 64)
    with pytest.raises(DelibError, match="sha256 mismatch"):
        models.materialize(bad)
    assert not models.assembled_path(bad).exists()
    assert list(models.assembled_path(bad).parent.iterdir()) == []


def test_pull_installs_only_missing_parts(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "CATALOGUE", (fake_spec(),))
    install_fake_part(site, 2)
    asked: list[str] = []

    def installer(requirements, progress) -> None:
        asked.extend(requirements)
        for i in (1, 3):
            install_fake_part(site, i)

    path = models.pull("fake-model", progress=False, installer=installer)
    assert asked == ["fake-model-part1==1.0", "fake-model-part3==1.0"]
    assert path.read_bytes() == b"".join(PARTS)


def test_verification_marker_is_invalidated_when_file_changes(tmp_path: Path) -> None:
    f = tmp_path / "one.gguf"
    f.write_bytes(b"weights")
    spec = ModelSpec("one", "test", ("one",), "1", hashlib.sha256(b"weights").hexdigest(), 7, "one.gguf")
    models.verify_cached(spec, f)
    assert (models.cache_dir() / "verified" / "one.sha256-ok").is_file()
    f.write_bytes(b"tampered weights")
    with pytest.raises(DelibError, match="sha256 mismatch"):
        models.verify_cached(spec, f)


def test_local_gguf_path_is_accepted_and_missing_one_refused(tmp_path: Path) -> None:
    f = tmp_path / "local.gguf"
    f.write_bytes(b"GGUF")
    assert models.resolve(f) == f
    with pytest.raises(DelibError, match="does not exist"):
        models.resolve(str(tmp_path / "absent.gguf"))



def test_a_local_file_or_folder_that_is_no_gguf_is_refused_not_looked_for_on_the_hub(tmp_path, monkeypatch):
    """``models/weights.bin`` has the shape of a Hugging Face ``owner/repo`` id: as a file here, it is named."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "weights.bin").write_bytes(b"x")
    monkeypatch.setattr(models, "_hf_download", lambda text: pytest.fail(f"looked for {text} on the hub"))
    for name, kind in (("models/weights.bin", "file"), ("models", "folder")):
        for call in (models.resolve, models.check):
            with pytest.raises(DelibError, match=f"model {name} is a {kind} here, not a .gguf file; llama.cpp reads"):
                call(name)

def test_check_refuses_what_resolve_refuses_without_fetching_anything(tmp_path: Path) -> None:
    """``check`` (a mixed team's models, before any loads) agrees with ``resolve`` on every refusal, and passes
    what resolve would fetch (a Hugging Face id) or find (a file, an installed model) without touching it."""
    absent = lambda spec: (None,) * len(spec.packages)  # noqa: E731
    present = lambda spec: (tmp_path / "part.bin",) * len(spec.packages)  # noqa: E731
    for name, locate in (("no-such-model", absent), ("qwen2.5-coder-0.5b", absent), (str(tmp_path / "x.gguf"), absent)):
        with pytest.raises(DelibError) as resolved:
            models.resolve(name, locate=locate)
        with pytest.raises(DelibError) as checked:
            models.check(name, locate=locate)
        assert str(checked.value) == str(resolved.value)
    (tmp_path / "x.gguf").write_bytes(b"")
    for name in ("qwen2.5-coder-0.5b", "owner/repo", "owner/repo/file.gguf", str(tmp_path / "x.gguf")):
        models.check(name, locate=present)


def test_table_has_a_row_per_catalogue_model() -> None:
    rows = models.table(locate=lambda spec: (None,) * len(spec.packages))
    assert [r.name for r in rows] == [s.name for s in models.catalogue()]
    assert not any(r.installed for r in rows)


def test_resolve_smollm2_verifies_installed_file(smollm2_path: Path) -> None:
    path = models.resolve("smollm2-135m")
    assert path == smollm2_path and path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    with path.open("rb") as f:
        assert f.read(4) == b"GGUF"
    assert (models.cache_dir() / "verified" / "smollm2-135m.sha256-ok").is_file()
