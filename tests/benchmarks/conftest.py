"""Fixtures of the benchmark tests: where the loaders read benchmark data."""

from __future__ import annotations

import pytest
from benchdata import data_folder


@pytest.fixture(scope="session")
def data_dir() -> str | None:
    """The benchmark data folder, or None on a clone without one: loaders then read the installed packages
    (splits no package ships are marked ``needs_split`` and never reach here unloaded)."""
    folder = data_folder()
    return None if folder is None else str(folder)
