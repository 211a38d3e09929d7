"""``delib``: the command line. Each command group is a module (evaluate, train, tools) over ``common``;
flags come from the config dataclasses (cli/flags.py) and choices from the registries.

Every subcommand turns a DelibError into one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from deliberation.cli import allocate, ask, compare, run, tools, train, trees
from deliberation.cli.common import Parser, flag_words
from deliberation.errors import DelibError


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="delib", description="Multi-agent LLM deliberation with a learned meta-policy (MPDF + SoftRankPO).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run.add_parsers(sub)
    ask.add_parsers(sub)
    train.add_parsers(sub)
    allocate.add_parsers(sub)
    trees.add_parsers(sub)
    compare.add_parsers(sub)
    tools.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        args = build_parser().parse_args(argv)  # flag types may refuse a value (an --out that is a file)
        args.argv = argv  # what command_line records, also when main is called from Python
        return args.func(args)
    except DelibError as err:
        print(f"delib: error: {flag_words(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("delib: interrupted; finished work is saved, rerun the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
