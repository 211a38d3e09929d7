"""What ``delib train-allocator`` trains on and how (no torch here: the CLI builds its flags from these)."""

from __future__ import annotations

from dataclasses import dataclass

from deliberation.engine.spec import VoteWeights
from deliberation.errors import DelibError, require_at_least, require_number


@dataclass(frozen=True)
class AllocatorTraining:
    """How an allocator is trained (``delib train-allocator``'s flags)."""

    lam: float = 0.0
    """lambda: the reward is 1[correct] - lambda * tokens / 1000; larger draws fewer samples."""
    step: int = 1
    """Samples a RESAMPLE draws (0: as many as the team)."""
    moves: int = 2
    """2: STOP and RESAMPLE; 3: DELIBERATE too, at the first decision (needs a deliberation branch)."""
    hidden: int = 32
    """Width of the MLP's two hidden layers."""
    sft_epochs: int = 300
    """Full-batch steps of the SFT stage (cross-entropy on the hindsight labels)."""
    rl_epochs: int = 300
    """SoftRankPO steps (each samples ``group`` trajectories per question)."""
    group: int = 8
    """Trajectories sampled per question an epoch: the group SoftRankPO ranks within."""
    lr: float = 3e-3
    """Adam's learning rate, both stages."""
    kl: float = 0.05
    """Weight of KL(pi || pi_sft), the paper's regulariser towards the SFT policy."""
    entropy: float = 0.01
    """Weight of the entropy bonus."""
    tau: float = 0.0
    """SoftRankPO's soft-rank temperature (0: hard ranks)."""
    seed: int = 0
    """Seeds the initial weights and the sampled trajectories."""

    def __post_init__(self) -> None:
        require_number("--lam", self.lam, 0, 100, "(reward per 1000 tokens)")
        require_at_least("--step", self.step, 0)
        require_at_least("--seed", self.seed, 0, "(numpy and torch take no negative seed)")
        require_at_least("--group", self.group, 2, "to rank rewards within a group")
        if self.moves not in (2, 3):
            raise DelibError(f"--moves must be 2 (STOP, RESAMPLE) or 3 (and DELIBERATE), got {self.moves}")
        for name in ("sft_epochs", "rl_epochs", "hidden"):
            require_at_least(f"--{name.replace('_', '-')}", getattr(self, name), 0 if "epochs" in name else 1)
        require_number("--lr", self.lr, 1e-6, 1.0)
        require_number("--kl", self.kl, 0, 100)
        require_number("--entropy", self.entropy, 0, 100)
        require_number("--tau", self.tau, 0, 100)


@dataclass(frozen=True)
class AllocatorFit:
    """What ``delib train-allocator`` trains on and writes."""

    trees: tuple[str, ...]
    out: str
    training: AllocatorTraining
    samples: int = 12
    """Round-0 samples a question holds in the stores: the most an episode draws in training."""
    vote: VoteWeights | None = None
    """The final vote's weighting (None: the plain vote)."""
    allow_test: bool = False
    """Training on a test split's store learns the questions it is measured on: opt-in only."""
    command: str = ""
