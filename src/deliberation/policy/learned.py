"""A trained network as a meta-policy the engine can call: numpy observations in, actions out.

``TrainedPolicy`` holds the network and the feature contract it was trained on. At inference (mpdf) it is
greedy; ``sample=True`` draws from its action distribution instead. Exploration for rollout collection is
``deliberation.policy.epsilon.EpsilonMixed`` around it, the one epsilon implementation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from deliberation.engine.features import PAPER, arrays, contract
from deliberation.engine.state import Observation
from deliberation.policy.network import MetaPolicyNet
from deliberation.actions import Action, action_set


@dataclass(frozen=True)
class TrainedPolicy:
    """A trained network plus the feature contract it was trained on; what the engine calls per round."""

    net: MetaPolicyNet
    feature_names: tuple[str, ...] = ()
    feature_version: int = 0
    sample: bool = False
    """Draw actions from the policy's distribution instead of taking its argmax."""

    def probs(self, own: np.ndarray, peers: np.ndarray) -> np.ndarray:
        """Action probabilities (A, K) in the order of the net's action set (K actions) for own (A, F) and
        peers (A, P, F)."""
        own_t = torch.as_tensor(np.asarray(own, dtype=np.float32))  # (A, F)
        peers_t = torch.as_tensor(np.asarray(peers, dtype=np.float32))  # (A, P, F)
        if own_t.dim() != 2 or peers_t.dim() != 3 or peers_t.shape[::2] != own_t.shape:
            raise ValueError(f"expected own (A, F) and peers (A, P, F), got {tuple(own_t.shape)} and "
                             f"{tuple(peers_t.shape)}")
        with torch.inference_mode():
            return torch.softmax(self.net(own_t, peers_t).double(), dim=-1).numpy()  # (A, K)

    def act(self, own: np.ndarray, peers: np.ndarray, rng: np.random.Generator) -> tuple[list[Action], np.ndarray]:
        """One action per agent and its log-probability (A,) under the distribution sampled from (the
        greedy one-hot unless ``sample``). One uniform draw per agent either way, so a run's random stream
        does not depend on the mode."""
        probs = self.probs(own, peers)  # (A, K)
        k = probs.shape[-1]
        behaviour = probs if self.sample else np.eye(k)[probs.argmax(-1)]  # (A, K)
        cdf = np.cumsum(behaviour, axis=-1)  # (A, K)
        draws = rng.random(len(behaviour))[:, None]  # (A, 1)
        index = np.minimum((draws >= cdf).sum(-1), k - 1)  # (A,)
        chosen = behaviour[np.arange(len(index)), index]  # (A,)
        return [action_set(k)[i] for i in index], np.log(chosen)

    @property
    def reads_summaries(self) -> bool:
        """Whether its features include log-probability ones (``FeatureSet.reads_summaries``)."""
        return (contract(self.feature_names, self.feature_version) or PAPER).reads_summaries

    def decide(self, obs: Observation, rng: np.random.Generator) -> tuple[tuple[Action, ...], tuple[float, ...]]:
        """The engine's ``MetaPolicy`` interface: the observation under the policy's own feature set (a
        policy saved before feature sets existed, or built without a contract, reads the paper's)."""
        feature_set = contract(self.feature_names, self.feature_version) or PAPER
        actions, logprobs = self.act(*arrays(obs, feature_set), rng)
        return tuple(actions), tuple(float(x) for x in logprobs)
