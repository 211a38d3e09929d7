"""Deliberation trees (docs/design.md, section Tree stores): every action's outcome recorded once per question
(``store``), built for round 0 and the full round 1 by ``delib tree`` (``build``), replayed by any method
through ``TreeBackend`` (``delib evaluate``, runs/replay.py), deeper rounds added lazily."""
