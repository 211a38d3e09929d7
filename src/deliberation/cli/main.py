"""``delib``: the command line. Each command group is a module (evaluate, train, tools) over ``common``;
flags come from the config dataclasses (cli/flags.py) and choices from the registries.

Every subcommand turns a DelibError into one line on stderr and exit status 2, and Ctrl-C into one line that
says what was kept: a command that saves its work as it goes sets ``saves_as_it_goes`` (``set_defaults``),
and a rerun resumes it; any other writes its output only when it finishes, so nothing of it was saved.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from deliberation.cli import allocate, ask, graphs, replays, run, tools, train, trees
from deliberation.cli.common import Parser, flag_words
from deliberation.errors import DelibError, check_arguments

INTERRUPTED = {True: "finished work is saved, rerun the same command to resume",
               False: "nothing was saved (this command writes its output only when it finishes); rerun it to start "
                      "over"}
"""What Ctrl-C kept, by whether the command resumes (``saved``)."""


def saved(args: argparse.Namespace | None) -> bool:
    """Whether an interrupted command kept work its rerun resumes: it saves as it goes, or its calls went to a
    response cache it was given (``delib ask --cache``), which its rerun replays."""
    return bool(getattr(args, "saves_as_it_goes", False)) or getattr(args, "cache", None) not in (None, "none")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="delib", description="Multi-agent LLM deliberation with a learned meta-policy (MPDF + SoftRankPO).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run.add_parsers(sub)
    ask.add_parsers(sub)
    train.add_parsers(sub)
    allocate.add_parsers(sub)
    graphs.add_parsers(sub)
    trees.add_parsers(sub)
    replays.add_parsers(sub)
    tools.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = None
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        check_arguments(argv)
        args = build_parser().parse_args(argv)  # flag types may refuse a value (an --out that is a file)
        args.argv = argv  # what command_line records, also when main is called from Python
        return args.func(args)
    except DelibError as err:
        print(f"delib: error: {flag_words(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"delib: interrupted; {INTERRUPTED[saved(args)]}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
