"""Learned compute allocation: a meta-policy that decides how many answers to draw.

The team of N agents answers (round-0 samples 0..N-1); then, after each draw, an allocator looks at the
vote so far and chooses STOP (answer with the vote now) or RESAMPLE (draw more: one sample, or a batch of
N, as the allocator was trained), up to a cap; a variant may also DELIBERATE once, at its first decision
(one round of the paper's PERSIST / REFINE / CONCEDE under the agreement rule), so that a comparison says
whether deliberation adds anything once sampling is learned. Sample j is the request every other method
sends as round-0 sample j (same prompt and seed), so a tree store holding 12 samples replays it offline.

- ``state.py``: the allocator's state (the vote's shape and the drawn samples' zero-cost signals) as a
  feature vector, one registry entry per feature;
- ``moves.py``: the moves and the ``Allocator`` protocol; the fixed stopping rules (early-stopping
  self-consistency's window, adaptive-consistency's Beta rule);
- ``network.py``: the learned allocator (a small MLP) and its checkpoint;
- ``episode.py``: the episode as the engine runs it on any backend (the ``mpdf-allocate`` method).

Training lives with the rest of training (``rl/allocation/``): the same decisions over a store's recorded
samples, precomputed per question, then SFT on hindsight-optimal moves and SoftRankPO with reward
1[correct] - lambda * tokens / 1000.
"""
