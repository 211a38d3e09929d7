"""Resumable outputs: what every command that runs questions into a folder it can resume shares.

``driver``: the per-question job (skip what the output holds, run the rest, record each result durably);
``lock``: one writer at a time per output folder; ``resume``: whether an output made under some settings may
be resumed under others, one rule per output kind; ``kinds``: the file that marks each kind of output, so that
no --out takes two kinds. Run directories (``runs/directory.py``), tree stores
(``trees/``) and rollout directories (``rl/rollout_files.py``) are built on these. A new output kind
writes its hooks (``driver.QuestionJob``) and its ``ResumeRule`` (list ``limit`` and ``concurrency`` among
the settings that may change: a resume may go further or faster), and opens its folder with
``resume.open_output``: the folder, the one-writer lock, the recorded settings and the refusal of a resume
under other settings come with that one call.
"""
