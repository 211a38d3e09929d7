"""``delib train-allocator``: train the compute allocator that ``delib run --method mpdf-allocate`` runs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from deliberation.cli import flags
from deliberation.cli.common import DATA_DIR_HELP, command_line, out_folder, set_data_dir
from deliberation.errors import DelibError

if TYPE_CHECKING:
    from deliberation.engine.spec import VoteWeights

EPILOG = """examples:
  delib tree --benchmark gsm8k --split train --limit 100 --samples 12 --out trees/gsm8k-train
  delib train-allocator --trees trees/gsm8k-train --lam 0.004 --out runs/allocator
  delib evaluate --trees trees/gsm8k-test --method mpdf-allocate --policy runs/allocator/allocator.pt \\
                 --agents 12 --rounds 0 --offline --out runs/allocate
A larger --lam draws fewer samples; training.json says what it and self-consistency at every k score and
spend on the training questions (in-sample)."""


def add_parsers(sub: argparse._SubParsersAction) -> None:
    from deliberation.engine.signals import SIGNALS
    from deliberation.methods.options import MethodOptions
    from deliberation.rl.allocation.config import AllocatorFit, AllocatorTraining

    p = sub.add_parser("train-allocator", help="train a compute allocator (mpdf-allocate) on training tree stores",
                       description="Learns when to stop drawing samples: after the team's answers and each further "
                       "draw, STOP (vote now) or RESAMPLE (draw more), from the vote so far and the samples' "
                       "answer log-probabilities and checked arithmetic. SFT on hindsight-optimal moves, then "
                       "SoftRankPO with reward 1[correct] - lam * tokens / 1000. Offline: the stores must hold "
                       "--samples round-0 samples a question (`delib tree --samples 12`).",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trees", required=True, type=flags.names, metavar="STORE[,STORE]",
                   help="training tree stores (train splits)")
    p.add_argument("--out", required=True, type=out_folder, help="folder for allocator.pt and training.json (one "
                   "that holds them is refused, never overwritten)")
    flags.add_flags(p, AllocatorFit, only=("samples", "allow_test"))
    p.add_argument("--vote-signal", choices=sorted(SIGNALS), help="weigh the final vote by this signal (CISC's "
                   "softmax at --vote-temperature; default: the plain vote)")
    p.add_argument("--vote-temperature", type=float, help="the weighted vote's temperature, with --vote-signal "
                   f"(default {MethodOptions.vote_temperature}, CISC's as `delib run --method cisc` takes it)")
    flags.add_flags(p, AllocatorTraining)
    p.add_argument("--data-dir", help=DATA_DIR_HELP)
    p.set_defaults(func=cmd_train_allocator)


def cmd_train_allocator(args: argparse.Namespace) -> int:
    from deliberation.rl.allocation.config import AllocatorFit, AllocatorTraining
    from deliberation.rl.allocation.fit import fit

    set_data_dir(args)
    vote = _vote(args.vote_signal, args.vote_temperature)
    training = AllocatorTraining(**flags.values(args, AllocatorTraining))
    spec = AllocatorFit(trees=args.trees, out=args.out, training=training,
                        samples=args.samples, vote=vote, allow_test=args.allow_test, command=command_line(args))
    print(f"-> {fit(spec, args.data_dir)}")
    return 0


def _vote(signal: str | None, temperature: float | None) -> VoteWeights | None:
    """The final vote's weighting: none without --vote-signal (and then --vote-temperature, which only a
    weighted vote reads, is refused), else the signal at the temperature (checked as `delib run` checks it)."""
    from deliberation.engine.spec import VoteWeights
    from deliberation.methods.options import MethodOptions

    if signal is None:
        if temperature is not None:
            raise DelibError("--vote-temperature weighs the vote by --vote-signal; pass --vote-signal too, or leave "
                             "--vote-temperature out")
        return None
    given = MethodOptions.vote_temperature if temperature is None else temperature
    return VoteWeights(signal, MethodOptions(vote_temperature=given).vote_temperature)
