"""The code sandbox: model-written programs run isolated (bubblewrap, a supervisor process, limits) and are
judged by trusted tests outside it (docs/guides/reliability.md, "Model-written code: what the sandbox guarantees").
``run.py`` runs programs and tests, ``isolation.py`` builds the bwrap jail, ``supervisor.py`` is the process
that starts a program, and ``calls.py`` carries a function's answers out as plain values."""
