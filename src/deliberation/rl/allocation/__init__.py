"""Training compute allocators (``deliberation.allocate``) on tree stores: every decision an allocator can
face, precomputed from the recorded samples (``paths.py``); SFT on hindsight-optimal moves, then SoftRankPO
(``train.py``); ``delib train-allocator``'s job (``fit.py``)."""
