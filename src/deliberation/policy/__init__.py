"""Every meta-policy: what picks PERSIST / REFINE / CONCEDE for each agent each round.

- ``rules``: fixed policies (constants, confidence-threshold, agreement-threshold);
- ``network``: the cross-attention network (torch);
- ``learned``: a trained network as an engine policy, loaded once per process;
- ``checkpoint``: saving, loading and shipped checkpoint names (``checkpoints/``);
- ``epsilon``: epsilon exploration around any policy, for rollout collection.

Submodules are imported explicitly, so importing this package does not load torch.
"""
