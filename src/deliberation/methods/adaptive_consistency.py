"""Adaptive-consistency (Aggarwal et al., EMNLP 2023): self-consistency that stops sampling once the
samples agree enough (engine/adaptive.py); ``--agents`` is the most samples it draws."""

from __future__ import annotations

from deliberation.engine.adaptive import adaptive_episode
from deliberation.engine.spec import MethodSpec
from deliberation.methods.base import fixed, samples_only

METHOD = fixed(MethodSpec(name="adaptive-consistency", policy=None), engine=samples_only, episode=adaptive_episode)
