"""The ``delib`` command line (``main``); argument parsing only."""
