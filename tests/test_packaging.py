"""pyproject.toml: metadata that installs without deprecation warnings."""

import re
import tomllib
from pathlib import Path

PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())


def test_license_is_an_spdx_string_with_a_setuptools_that_reads_it():
    """A TOML-table license makes setuptools >= 77 warn on every install; the SPDX string needs >= 77."""
    assert PYPROJECT["project"]["license"] == "MIT"
    requirement = next(r for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools"))
    assert int(re.fullmatch(r"setuptools>=(\d+).*", requirement).group(1)) >= 77
