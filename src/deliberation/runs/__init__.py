"""Runs: the run directory (``directory``), running one method over a split (``runner``), replaying methods
over a tree store (``evaluate``), Ray distribution (``distributed``) and experiment grids (``experiment``)."""
