"""Adaptive-consistency (Aggarwal et al., EMNLP 2023): self-consistency that stops sampling once the
samples agree enough (engine/adaptive.py); ``--agents`` is the most samples it draws."""

from __future__ import annotations

from dataclasses import replace

from deliberation.engine.adaptive import adaptive_episode
from deliberation.engine.spec import MethodSpec
from deliberation.methods.base import fixed

METHOD = fixed(MethodSpec(name="adaptive-consistency", policy=None), engine=lambda e: replace(e, rounds=0),
               episode=adaptive_episode)
