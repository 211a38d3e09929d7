"""Training the meta-policy (docs/design.md, section Training): ``advantages`` (SoftRankPO and comparators), ``losses``
(algorithm registry), ``data`` (Decision records -> tensors), ``sft`` (oracle labels), ``trainer`` (SFT and
policy-gradient loops), ``config`` (TrainConfig). Submodules are imported explicitly; this ``__init__``
loads nothing so that importing the package does not load torch."""
