"""MkDocs hook: pages whose content lives elsewhere are generated at build time, so they cannot drift.

- ``reference/cli.md``: every subcommand's ``--help``, from ``delib``'s own argument parser
  (``deliberation.cli.main.build_parser``; its flags come from the config dataclasses, cli/flags.py). Each
  subcommand gets a ``## delib NAME`` heading, so guides link to ``reference/cli.md#delib-NAME`` and the strict
  build checks those anchors.
- ``reference/api.md``: one mkdocstrings block per name ``deliberation`` exports (``__all__``, each loaded
  lazily from the module ``_LAZY`` names), so a name added to or removed from the package's seam is added to or
  removed from the page, and its text is the object's own docstring.
- ``methods.md``: the method table (source, departures, offline replay) is the README's, between its
  ``methods-table`` markers, so the README a newcomer reads first and the site say the same; the README's
  links point into ``docs/`` and are rewritten to the page's own place.

Each page holds a marker that the rendered content replaces; every other page is left as written.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Iterator

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")
README_TABLE = re.compile(r"<!-- methods-table:start -->\n(.*?)<!-- methods-table:end -->", re.DOTALL)

WIDTH = "100"
"""Columns argparse wraps the help to (it reads $COLUMNS), fixed so the page does not depend on a terminal."""


def subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of every subcommand, in the order ``delib --help`` lists them."""
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name, ""), sub


def render_cli() -> str:
    """The CLI reference as Markdown: the top-level help, then each subcommand's help under its heading."""
    os.environ["COLUMNS"] = WIDTH
    from deliberation.cli.main import build_parser

    parser = build_parser()
    parts = ["```text", parser.format_help().rstrip(), "```"]
    for name, summary, sub in subcommands(parser):
        parts += ["", f"## delib {name}", "", f"{summary}." if summary else "", "",
                  "```text", sub.format_help().rstrip(), "```"]
    return "\n".join(parts) + "\n"


def api_targets() -> list[tuple[str, str]]:
    """(public name, dotted path of the object it is) for every name in ``deliberation.__all__``."""
    import deliberation

    lazy = {name: target.replace(":", ".") for name, target in deliberation._LAZY.items()}
    return [(name, lazy[name] if name in lazy else f"{getattr(deliberation, name).__module__}.{name}")
            for name in deliberation.__all__]


def render_api() -> str:
    """One section per public name: how to import it, then mkdocstrings' rendering of the object under the
    path where it is defined, with its signature (that heading is kept out of the table of contents, which
    lists the public names)."""
    options = ["    options:", "      show_root_heading: true", "      show_root_toc_entry: false"]
    parts = []
    for name, path in api_targets():
        parts += [f"## `deliberation.{name}`", "", f"`from deliberation import {name}`", "",
                  f"::: {path}", *options, ""]
    return "\n".join(parts)


def render_methods(readme: str = README) -> str:
    """The README's method table, its links made relative to ``docs/`` (``docs/x.md`` -> ``x.md``)."""
    with open(readme, encoding="utf-8") as handle:
        found = README_TABLE.search(handle.read())
    if found is None:
        raise ValueError(f"{readme} lost its methods-table markers; put them back around the method table")
    return found.group(1).replace("](docs/", "](")


PAGES: dict[str, tuple[str, Callable[[], str]]] = {
    "reference/cli.md": ("<!-- cli-reference -->", render_cli),
    "reference/api.md": ("<!-- api-reference -->", render_api),
    "methods.md": ("<!-- methods-table -->", render_methods),
}
"""Generated page -> (the marker it holds, what replaces the marker)."""


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Put the rendered content where a generated page's marker is; every other page is left as written."""
    if page.file.src_uri not in PAGES:
        return markdown
    marker, render = PAGES[page.file.src_uri]
    if marker not in markdown:
        raise ValueError(f"{page.file.src_uri} lost its marker {marker}; put it back where the content goes")
    return markdown.replace(marker, render())
