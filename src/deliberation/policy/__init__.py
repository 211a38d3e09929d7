"""The learned meta-policy: ``network.py`` holds the cross-attention network, the ``MetaPolicy`` wrapper the
engine calls, and checkpoint save/load. Import from ``deliberation.policy.network`` (kept out of this
``__init__`` so that importing the package does not load torch)."""
