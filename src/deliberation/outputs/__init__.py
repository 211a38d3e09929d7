"""Resumable outputs: what every command that runs questions into a folder it can resume shares.

``driver``: the per-question job (skip what the output holds, run the rest, record each result durably);
``lock``: one writer at a time per output folder; ``resume``: whether an output made under some settings may
be resumed under others, one rule per output kind. Run directories (``runs/directory.py``), tree stores
(``trees/``) and rollout directories (``rl/rollout_files.py``) are built on these three; a new output kind
declares its hooks and its ``ResumeRule`` and gets resuming, locking and the refusal message for free.
"""
