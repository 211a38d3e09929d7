"""Adaptive-consistency (Aggarwal et al., EMNLP 2023): self-consistency that stops sampling once the
samples agree enough (engine/adaptive.py); ``--agents`` is the most samples it draws. The paper draws up to
40; under its Beta criterion at 0.95 no stop comes before 4 agreeing answers (3 give 0.9375), so with the
6 samples a tree store holds it saves at most 2 of them, and only on questions whose first 4 or 5 agree."""

from __future__ import annotations

from functools import partial

from deliberation.engine.adaptive import adaptive_episode, first_settled, settled
from deliberation.engine.spec import MethodSpec
from deliberation.methods.base import Method, samples_only
from deliberation.methods.calls import Calls

METHOD = Method(spec=lambda cfg: MethodSpec(name="adaptive-consistency", policy=None,
                                            stop=partial(settled, threshold=cfg.adaptive_threshold)),
                engine=samples_only, episode=adaptive_episode, options=frozenset({"adaptive_threshold"}),
                calls=lambda cfg: Calls((1, cfg.engine.agents)),  # one sample at a time until the rule holds
                earliest_stop=lambda options: first_settled(options.adaptive_threshold),
                about="samples one at a time until the Beta stopping rule holds (at 0.95: 4 alike at the "
                "earliest), at most --agents (Aggarwal et al. 2023)")
