"""Fixtures of the benchmark tests: where the loaders read benchmark data."""

from __future__ import annotations

import pytest
from benchdata import data_folder


@pytest.fixture(scope="session")
def data_dir() -> str | None:
    """The benchmark data folder ($DELIB_DATA_DIR): the real one, or on a clone without one the stand-in that
    tests/conftest.py writes (GSM8K train only: loaders read every other split from the installed packages)."""
    folder = data_folder()
    return None if folder is None else str(folder)
