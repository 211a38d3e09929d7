"""The deliberation engine: round loop, meta-cognitive state, prompts, votes, confidence."""
