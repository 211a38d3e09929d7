"""The documentation: the MkDocs site builds strictly (a broken link, a missing anchor or page, a mkdocstrings
warning fails it), offline, with the CLI and API reference generated from the code; the README stays a page
that fits on a screen; and every repository path the README and the pages name in backticks exists."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README_MAX_LINES = 200
PATH_IN_BACKTICKS = re.compile(r"`((?:docs|experiments|src|tests|benchmarks|data/trees|data/rollouts)/[\w./-]+)`")
"""A repository path written as code in prose: the top-level folders of committed files, no placeholders."""


def references_hook():
    """docs/hooks/references.py, the MkDocs hook that renders the reference pages (a file, not a package)."""
    spec = importlib.util.spec_from_file_location("references", DOCS / "hooks" / "references.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    """``mkdocs build --strict`` into a fresh folder, offline (no hub, no network needed), once for the module."""
    site = tmp_path_factory.mktemp("site")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    return done, site


def test_the_site_builds_strictly_without_a_warning(built_site):
    done, site = built_site
    warnings = [line for line in done.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert done.returncode == 0 and not warnings, done.stderr[-4000:]
    assert (site / "index.html").is_file() and (site / "guides" / "trees" / "index.html").is_file()


def test_the_cli_reference_holds_every_subcommands_help(built_site):
    """Generated from the parser at build time: every subcommand has its section and its real flags."""
    from deliberation.cli.main import build_parser

    page = (built_site[1] / "reference" / "cli" / "index.html").read_text()
    names = [name for name, _, _ in references_hook().subcommands(build_parser())]
    assert len(names) > 10
    for name in names:
        assert f'id="delib-{name}"' in page, f"the CLI reference lacks delib {name}"
    assert "--lazy-critic" in page and "--backend-opt" in page


def test_the_api_reference_documents_every_public_name(built_site):
    import deliberation

    page = (built_site[1] / "reference" / "api" / "index.html").read_text()
    for name in deliberation.__all__:
        assert f"from deliberation import {name}</code>" in page, f"the API reference lacks {name}"
    assert "Which questions of a split a command runs on" in page  # Selection's docstring, rendered


def test_the_results_data_stay_out_of_the_site(built_site):
    """docs/results' Markdown and figures are pages; its run directories and records are not copied."""
    site = built_site[1]
    assert (site / "results" / "paired" / "look-3" / "headline" / "index.html").is_file()
    assert not list(site.glob("results/**/*.jsonl")) and not list(site.glob("results/**/*.json"))


def test_the_readme_fits_on_a_screen():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"


def test_every_repository_path_the_docs_name_exists():
    """A path written as code (`docs/results/...`, `experiments/...`) is a link a reader follows by hand: a
    moved or renamed file fails here instead of leaving the prose pointing nowhere."""
    pages = [REPO / "README.md", *sorted(p for p in DOCS.rglob("*.md") if "results" not in p.parts)]
    missing = [f"{page.relative_to(REPO)}: {path}" for page in pages
               for path in PATH_IN_BACKTICKS.findall(page.read_text()) if not (REPO / path).exists()]
    assert not missing, "paths named in the docs that do not exist: " + "; ".join(missing)


def test_the_methods_page_holds_the_readmes_method_table(built_site):
    """One table, two places: the README's rows are the methods page's (its links rewritten into docs/)."""
    page = (built_site[1] / "methods" / "index.html").read_text()
    table = references_hook().render_methods()
    assert "](docs/" not in table and "<!-- methods-table" not in page
    for row in table.splitlines()[2:]:
        name = row.split("|")[1].strip().split("`")[1]
        assert f"<code>{name}</code>" in page, f"the methods page lacks the README's row for {name}"


def test_every_method_has_a_row_in_the_readmes_method_table():
    """A method `delib run` accepts is named in the table (a family by its glob, `always-*`), with its source."""
    from deliberation.methods import METHODS

    table = references_hook().render_methods()
    named = set(re.findall(r"`([a-z0-9*.-]+)`", table))
    missing = [m for m in METHODS if m not in named and not any(
        n.endswith("*") and m.startswith(n[:-1]) for n in named)]
    assert not missing, f"methods without a row in the README's table: {missing}"
