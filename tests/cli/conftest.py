"""Fixtures of the bad-input tests: a folder to run in, and the check that a command was refused in
one ``delib: error:`` line with exit status 2, having written nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from deliberation.cli.main import main


@pytest.fixture
def here(tmp_path, monkeypatch) -> Path:
    """The test's folder as the current folder (so a path written relative to it is caught), holding a file
    ``afile`` and an empty folder ``afolder``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("not a folder\n")
    (tmp_path / "afolder").mkdir()
    return tmp_path


@pytest.fixture
def files(here) -> Callable[[], list[str]]:
    """Every path under ``here``, sorted: compared before and after a refused command."""
    return lambda: sorted(str(p.relative_to(here)) for p in here.rglob("*"))


@pytest.fixture
def refused(files, capsys) -> Callable[..., str]:
    """Run ``delib *argv``; assert one error line, exit status 2 and no file added or removed under ``here``;
    return the line."""
    def run(*argv: str) -> str:
        before = files()
        try:
            code = main(list(argv))
        except SystemExit as done:  # argparse's own refusals exit from inside the parser
            code = done.code
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1 and err.startswith("delib: error:"), err
        assert files() == before
        return err

    return run


@pytest.fixture
def experiment_file(here) -> Callable[[str], Path]:
    """Writes ``exp.toml``: cot on the scripted backend into ``here/exp-out``, with ``body`` (other top-level
    keys and tables) before its [backend] table."""
    def write(body: str) -> Path:
        path = here / "exp.toml"
        path.write_text(f'name = "x"\nout = "{(here / "exp-out").as_posix()}"\nmethods = ["cot"]\n{body}'
                        '[backend]\nname = "scripted"\n')
        return path

    return write
