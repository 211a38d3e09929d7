"""The checkpoints shipped in the package (``policy/checkpoints/``) and how ``--policy`` names one.

``checkpoint_path`` lets ``--policy`` name a shipped checkpoint (the policies ``default``, ``grpo``,
``qwen2.5-coder-1.5b``, ``qwen2.5-coder-1.5b-trees``; the allocator ``allocate-qwen2.5-coder-1.5b``) without
knowing where pip put it; ``content_hash`` tells checkpoints apart in a
run's config.json, and ``sha256_hex`` is the hash a registration commits. No torch here: a run records its
policy before anything heavy loads.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from deliberation.errors import DelibError

SHIPPED = Path(__file__).resolve().parent / "checkpoints"
SHIPPED_POLICY = SHIPPED / "default.pt"
ALLOCATOR_PREFIX = "allocate-"
"""How a shipped allocator's name starts (``mpdf-allocate``'s checkpoints); every other shipped checkpoint is a
deliberation policy. tests/allocate/test_shipped_allocator.py reads each one to check its kind."""


def shipped_names(allocator: bool) -> list[str]:
    """The names of the shipped allocators (``allocator``), else of the shipped deliberation policies."""
    return sorted(p.stem for p in SHIPPED.glob("*.pt") if p.stem.startswith(ALLOCATOR_PREFIX) == allocator)


def checkpoint_path(policy: str, allocator: bool = False) -> Path:
    """``policy`` as a file: a path as given, or a shipped checkpoint by name. A missing path is left for
    the loader's "not found" error (a folder for its "is a folder" one); an unknown bare name lists the shipped
    ones of the kind wanted (``allocator``: allocators, else deliberation policies)."""
    if not policy.strip():
        raise DelibError("the policy's path is empty; pass the path of a checkpoint or a shipped name")
    path = Path(policy)
    if path.is_file() or path.suffix == ".pt" or len(path.parts) > 1:
        return path
    shipped = SHIPPED / f"{policy}.pt"
    if shipped.is_file():
        return shipped
    if path.is_dir():
        return path
    kind, example = ("allocator", "an allocator.pt") if allocator else ("policy", "a policy.pt")
    raise DelibError(f"policy {policy!r} is neither a file nor a shipped {kind} "
                     f"({', '.join(shipped_names(allocator))}); pass the path of {example} or one of those names")


def sha256_hex(path: Path) -> str:
    """The full hex SHA-256 of the file at ``path`` (what a registration commits)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def content_hash(path: Path) -> str:
    """``sha256:`` and the first 12 hex digits of the file's SHA-256 (enough to tell checkpoints apart)."""
    return "sha256:" + sha256_hex(path)[:12]
