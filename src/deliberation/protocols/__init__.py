"""Multi-agent protocols besides the round loop: the paper's other baselines, each run through the engine's
requests, answer checking and token accounting like every method (``methods/`` registers them).

- ``php.py``: Progressive-Hint Prompting (Zheng et al. 2023): re-ask with the earlier answers as hints until
  two consecutive answers agree.
"""
