"""Multi-agent protocols besides the round loop: the paper's other baselines, each run through the engine's
requests, answer checking and token accounting like every method (``methods/`` registers them).

- ``php.py``: Progressive-Hint Prompting (Zheng et al. 2023): re-ask with the earlier answers as hints until
  two consecutive answers agree;
- ``graph.py``, ``swarm.py``, ``designs.py``: communication graphs whose edges are learned (GPTSwarm, Zhuge
  et al. 2024; AgentPrune, Zhang et al. 2025): sampling, the final graph, pruning, running one on a
  question, and the optimised graph's file (``rl/graph_optimize.py`` optimises it);
- ``aflow.py``, ``workflow.py``: AFlow's operators and workflows (Zhang et al. 2025), the two it found as
  data, and the file of a searched one (``rl/aflow_search.py`` searches).
"""
