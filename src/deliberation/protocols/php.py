"""Progressive-Hint Prompting (PHP; Zheng et al. 2023, "Progressive-Hint Prompting Improves Reasoning in
Large Language Models", reference code chuanyang-Zheng/Progressive-Hint, ``main_clean.py``).

One agent answers (the base interaction: round-0 sample 0, the request every method sends first); then it
is asked again with every earlier answer, oldest first and repeats kept, appended to the question's text
(before the answer-format instruction) as " (Hint: The answer is near to A1, A2, ...)." until the newest
answer equals the one before it; that answer is the team's. A hint is the answer as the response states it
(MATH: the LaTeX of its last ``\boxed{}``), as the reference hints its cleaned answer strings; agreement
compares voting keys. A MATH answer holding a comma (a pair, an interval) reads ambiguously among the
comma-separated hints, as it does in the reference. Interaction k is seeded as round k of agent 0.

Departures, each for a reason:
1. A cap (``--php-max-calls``, default 10): the reference loop has none (``while True``). The paper's Table
   8 reports 2.0-2.4 interactions on average with GPT-3.5/4, so 10 ends only loops that do not settle; a
   question the cap ends answers with its last answer, and its episode says so (``Episode.capped``; a run's
   summary counts them, ``Summary.capped``, and its line says how many).
2. Zero-shot prompts, the project's own (the same base prompt as every method), where the reference uses 8
   few-shot exemplars with hints (its PHP prompt files); the hint sentence is the reference's.
3. Sampling at the run's temperature (0.7 in the tree stores), where the reference decodes greedily by
   default: our comparisons hold the sampling settings of every method equal.
4. An unparseable answer is no hint and never agrees (the reference compares cleaned strings, so two empty
   answers would stop it).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Sequence

import numpy as np

from deliberation.engine import prompts
from deliberation.engine.loop import AgentRecord, Context, episode_of, generate, record_of, turn_of
from deliberation.actions import Action
from deliberation.types import Episode, Message

HINT = " (Hint: The answer is near to {})."


def hinted(ctx: Context, hints: list[str], system: str = prompts.SYSTEM) -> tuple[Message, ...]:
    """The base prompt (under ``system``) with the hint sentence right after the question's text, before the
    benchmark's answer format (the reference's placement and wording; AgentPrune's Math Solver's too)."""
    example = replace(ctx.example, question=ctx.example.question + HINT.format(", ".join(hints)))
    return prompts.initial_messages(ctx.bench.format_question(example), system)


def hints_of(ctx: Context, records: Sequence[AgentRecord]) -> list[str]:
    """The hints of ``records``: each parseable answer as its response states it (MATH: the LaTeX of its last
    ``\\boxed{}``), as the reference hints its cleaned answer strings."""
    return [ctx.bench.extract_for(ctx.example, r.text) or r.key for r in records if r.key is not None]


def php_episode(ctx: Context, rng: np.random.Generator) -> Episode:
    """The base answer, then hinted answers until two consecutive ones agree or ``ctx.spec.protocol`` (the
    cap on interactions) is reached."""
    start = time.perf_counter()
    cap: int = ctx.spec.protocol
    asked = prompts.initial_messages(ctx.question)
    [out] = generate(ctx, [asked], [0], 0)
    records = [record_of(ctx, out, True, asked)]
    turns = [turn_of(ctx, 0, 0, None, records[0], [out])]
    while len(records) < cap and not _agree(records[-2:]):
        hints = hints_of(ctx, records)
        asked = hinted(ctx, hints) if hints else prompts.initial_messages(ctx.question)
        [out] = generate(ctx, [asked], [0], len(records))
        records.append(record_of(ctx, out, True, asked))
        turns.append(turn_of(ctx, 0, len(records) - 1, Action.REFINE, records[-1], [out]))
    return replace(episode_of(ctx, records[-1:], turns, len(records) - 1, start), capped=not _agree(records[-2:]))


def _agree(last: list) -> bool:
    return len(last) == 2 and last[0].key is not None and last[0].key == last[1].key
