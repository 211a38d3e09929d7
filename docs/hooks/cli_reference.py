"""MkDocs hook: the CLI reference page (reference/cli.md) is rendered from ``delib``'s own argument parser.

The page holds a marker; at build time it is replaced by every subcommand's ``--help`` text, taken from
``deliberation.cli.main.build_parser`` (the flags there come from the config dataclasses, cli/flags.py), so
the reference cannot drift from the flags users get. Each subcommand gets a ``## delib NAME`` heading, so
guides link to ``reference/cli.md#delib-NAME`` and the strict build checks those anchors.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator

MARKER = "<!-- cli-reference -->"
PAGE = "reference/cli.md"
WIDTH = "100"
"""Columns argparse wraps the help to (it reads $COLUMNS), fixed so the page does not depend on a terminal."""


def subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of every subcommand, in the order ``delib --help`` lists them."""
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name, ""), sub


def render() -> str:
    """The reference as Markdown: the top-level help, then each subcommand's help under its heading."""
    os.environ["COLUMNS"] = WIDTH
    from deliberation.cli.main import build_parser

    parser = build_parser()
    parts = ["```text", parser.format_help().rstrip(), "```"]
    for name, summary, sub in subcommands(parser):
        parts += ["", f"## delib {name}", "", f"{summary}." if summary else "", "",
                  "```text", sub.format_help().rstrip(), "```"]
    return "\n".join(parts) + "\n"


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Put the rendered reference where the page's marker is; every other page is left as written."""
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{PAGE} lost its marker {MARKER}; put it back where the reference goes")
    return markdown.replace(MARKER, render())
