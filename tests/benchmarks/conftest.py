"""Fixtures of the benchmark tests: the shared data folder beside the repository (or $DELIB_DATA_DIR)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The benchmark data folder. Fails, never skips, when it is missing."""
    folder = Path(os.environ.get("DELIB_DATA_DIR") or REPO.parent / "shared" / "data").resolve()
    if not (folder / "README.md").is_file():
        pytest.fail(f"benchmark data not found at {folder}; set DELIB_DATA_DIR to the shared/data folder")
    return folder
