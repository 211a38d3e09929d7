"""Colour and marker of each method in every figure, from one registry keyed by method name.

A method keeps its style across figures (mpdf is the same purple star in the accuracy-against-tokens figure,
the paired figure and the team-size figure), and no two methods of one figure share a (colour, marker)
pair. A row's method is the first registered method name among the words of its label (``mpdf
[qwen2.5-coder-1.5b-trees]`` -> mpdf, ``best rule: agreement-resample`` -> agreement-resample,
``self-consistency [agents=6]`` -> self-consistency). A label naming no registered method (an SFT arm, a
training run), or a second label of a method the figure already drew (two checkpoints of mpdf), takes the
next fallback style whose colour the figure has not used yet, so a figure repeats no pair and, up to the
fallback palette's size, no colour. Colours come from matplotlib's tab20 and tab20b palettes, one of its own
for each registered method, with markers to tell close hues apart.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any, Iterable

from deliberation import methods


@dataclass(frozen=True)
class Style:
    """How one method is drawn: a colour (hex) and a matplotlib marker."""

    colour: str
    marker: str

    def errorbar(self) -> dict[str, Any]:
        """The keywords of ``Axes.errorbar`` (a point with its interval)."""
        return {"fmt": self.marker, "color": self.colour}

    def line(self) -> dict[str, Any]:
        """The keywords of ``Axes.plot`` (a line with markers)."""
        return {"marker": self.marker, "color": self.colour}


STYLES: dict[str, Style] = {
    # the paired experiment's arms: tab10's strong hues, a marker each
    "mpdf": Style("#9467bd", "*"),
    "oracle": Style("#17becf", "P"),
    "self-consistency": Style("#1f77b4", "o"),
    "adaptive-consistency": Style("#2ca02c", "h"),
    "cisc": Style("#ff7f0e", "D"),
    "cisc-logprob": Style("#ffbb78", "d"),
    "agreement-resample": Style("#d62728", "^"),
    "always-resample": Style("#ff9896", "v"),
    "always-persist": Style("#8c564b", "s"),
    "always-refine": Style("#e377c2", "p"),
    "always-concede": Style("#bcbd22", "X"),
    # the other rules and sampling baselines: tab20's light hues
    "confidence-threshold": Style("#c49c94", "<"),
    "agreement-threshold": Style("#f7b6d2", ">"),
    "agreement-then-confidence": Style("#dbdb8d", "8"),
    "early-stopping-sc": Style("#98df8a", "H"),
    "mpdf-allocate": Style("#c5b0d5", "P"),
    "cot": Style("#7f7f7f", "o"),
    "php": Style("#9edae5", "d"),
    # the multi-agent systems: tab20b's dark hues
    "gptswarm": Style("#393b79", "s"),
    "agentprune": Style("#637939", "^"),
    "aflow": Style("#8c6d31", "D"),
    "aflow-gsm8k": Style("#bd9e39", "v"),
    "aflow-math": Style("#e7ba52", "<"),
    "debate": Style("#843c39", "p"),
    "reconcile": Style("#7b4173", "h"),
    "dylan": Style("#5254a3", "X"),
}
"""A style per method (each a registered one: ``tests/report/test_styles.py``); a method without an entry draws
in a fallback style (``figure_styles``) until it is given one here."""

FALLBACK_COLOURS = ("#000000", "#8ca252", "#ad494a", "#636363", "#a55194", "#6b6ecf", "#e7cb94", "#b5cf6b",
                    "#e7969c", "#ce6dbd", "#9c9ede", "#d6616b", "#cedb9c", "#de9ed6", "#3182bd", "#e6550d",
                    "#31a354", "#756bb1", "#6baed6", "#fd8d3c", "#74c476", "#bdbdbd")
"""Black, then tab20b's colours the registry leaves unused (those farthest from its hues first), a few of
tab20c's, and light grey."""
FALLBACK_MARKERS = "osD^vPX*ph<>8Hd"

_WORD = re.compile(r"[A-Za-z0-9.\-]+")


def method_of(label: str) -> str | None:
    """The registered method a row's label names (its first word that is one), or None."""
    return next((word for word in _WORD.findall(label) if word in methods.METHODS), None)


def figure_styles(labels: Iterable[str]) -> dict[str, Style]:
    """A style for each distinct label of one figure, in order: its method's registered style while no
    earlier label of the figure took it, else the first fallback (colour, marker) the figure has not drawn,
    preferring a colour it has not used. Deterministic: the same labels in the same order get the same
    styles."""
    chosen: dict[str, Style] = {}
    for label in dict.fromkeys(labels):
        own = STYLES.get(method_of(label) or "")
        chosen[label] = own if own is not None and own not in chosen.values() else _fallback(chosen.values())
    return chosen


def _fallback(taken: Iterable[Style]) -> Style:
    """The first fallback style not in ``taken``: a colour the figure has not used while one is left, then a
    new pair; past all 330 pairs (a figure no one reads), near-black colours of their own."""
    taken = set(taken)
    used = {s.colour for s in taken}
    pairs = [Style(c, m) for m, c in itertools.product(FALLBACK_MARKERS, FALLBACK_COLOURS)]
    fresh = [s for s in pairs if s.colour not in used] or [s for s in pairs if s not in taken]
    return fresh[0] if fresh else next(s for n in itertools.count(1) if (s := Style(f"#{n:06x}", ".")) not in taken)
