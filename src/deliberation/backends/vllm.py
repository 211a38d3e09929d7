"""A backend on vLLM's offline engine (``vllm.LLM``), for GPU machines.

Every completion carries a log-probability summary, as llamacpp's do (``summaries``, on by default: vLLM
reports the sampled token's log-probability at no extra model cost), from vLLM 0.10 on, whose engine
reports the raw logits' log-probabilities; older versions record none.

Why: vLLM's continuous batching decodes a whole round (every agent of every question) at once, with a
per-request seed, so the batch-first ``generate`` maps onto one ``LLM.chat`` call. vLLM on PyPI is
CUDA-only, so this file stays thin and its output mapping is a pure function tested with fakes.

API used (vLLM docs, https://docs.vllm.ai/en/latest/api/vllm/entrypoints/llm/ and .../vllm/outputs/):
- ``LLM(model, tensor_parallel_size, gpu_memory_utilization, max_model_len, **engine_kwargs)``;
- ``LLM.chat(list of conversations, sampling_params=list of SamplingParams, use_tqdm=False)`` applies
  the model's chat template (with the generation prompt) and returns one ``RequestOutput`` per
  conversation, in order;
- ``SamplingParams(n=1, temperature, max_tokens, seed, stop, logprobs, top_p, top_k, min_p,
  repetition_penalty, presence_penalty, frequency_penalty)``, the last six neutral (``PLAIN_SAMPLING``):
  ``logprobs=k`` returns, per generated token, the k most likely tokens plus the sampled one; ``None``
  returns none;
- ``RequestOutput.prompt_token_ids`` and ``.outputs[0]`` (a ``CompletionOutput`` with ``text``,
  ``token_ids``, ``finish_reason`` and ``logprobs``: one ``dict[token_id, Logprob]`` per generated
  token, ``Logprob`` having ``logprob``, ``rank`` and ``decoded_token``; newer versions may hand a
  ``FlatLogprobs`` sequence, which reads the same way position by position).
"""

from __future__ import annotations

import time
from typing import Any, Mapping, Sequence

from deliberation.backends.base import PLAIN_SAMPLING
from deliberation.backends.logprob_summary import from_texts
from deliberation.errors import DelibError, install_hint
from deliberation.types import Completion, GenerationRequest, TokenLogprob


def import_vllm() -> Any:
    """The ``vllm`` module, or a DelibError with the install hint."""
    try:
        import vllm
    except ImportError as err:
        raise DelibError(install_hint("vllm", "vllm") + " (CUDA GPUs only)") from err
    return vllm


class VLLMBackend:
    """vLLM's offline ``LLM`` engine on ``model`` (a hub id or a local folder)."""

    name = "vllm"
    supports_logprobs = True

    def __init__(
        self,
        model: str,
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        max_model_len: int | None = None,
        summaries: bool = True,
        **engine_kwargs: Any,
    ) -> None:
        vllm = import_vllm()
        self.model = model
        self.summaries = summaries and _raw_logprobs(getattr(vllm, "__version__", "0"))
        self._sampling_params = vllm.SamplingParams
        self._llm = vllm.LLM(
            model=model,
            tensor_parallel_size=tensor_parallel_size,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            **engine_kwargs,
        )

    @staticmethod
    def records_summaries(summaries: bool = True, **_: Any) -> bool:
        """With ``summaries`` (the default) on a vLLM that reports raw log-probabilities (read from its installed
        version, without importing it)."""
        from importlib.metadata import PackageNotFoundError, version

        try:
            return summaries and _raw_logprobs(version("vllm"))
        except PackageNotFoundError:
            return False

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """One ``LLM.chat`` call for the whole batch; ``latency_s`` is that call's wall time."""
        if not requests:
            return []
        conversations = [[{"role": m.role, "content": m.content} for m in r.messages] for r in requests]
        params = [self._sampling_params(**sampling_kwargs(r, self.summaries)) for r in requests]
        start = time.perf_counter()
        outputs = self._llm.chat(conversations, sampling_params=params, use_tqdm=False)
        latency = time.perf_counter() - start
        if len(outputs) != len(requests):
            raise DelibError(f"vLLM returned {len(outputs)} outputs for {len(requests)} requests; upgrade vllm")
        return [completion_from_output(o, r, latency, self.summaries) for o, r in zip(outputs, requests)]

    def close(self) -> None:
        """Drop the engine so its GPU memory can be freed."""
        self._llm = None


def _raw_logprobs(version: str) -> bool:
    """Whether this vLLM reports the raw logits' log-probabilities (its V1 engine, the only one from 0.10 on;
    the V0 engine before it reported them after temperature), as log-probability summaries are defined."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version) >= Version("0.10")
    except InvalidVersion:
        return False


def sampling_kwargs(request: GenerationRequest, summaries: bool = False) -> dict[str, Any]:
    """Keyword arguments of ``vllm.SamplingParams`` for ``request`` (one sample, its own seed, plain sampling:
    ``PLAIN_SAMPLING``, top-k off as -1, which every vLLM version takes). With ``summaries`` the sampled
    tokens' log-probabilities come back (``logprobs=0``) for the completion's summary."""
    return {
        **PLAIN_SAMPLING,
        "top_k": -1,
        "n": 1,
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "seed": request.seed,
        "stop": list(request.stop) or None,
        "logprobs": request.top_logprobs if request.logprobs else (0 if summaries else None),
    }


def completion_from_output(output: Any, request: GenerationRequest, latency_s: float,
                           summaries: bool = False) -> Completion:
    """Map a vLLM ``RequestOutput`` (first sample) to a Completion, with its log-probability summary when
    ``summaries``."""
    sample = output.outputs[0]
    logprobs = None
    if sample.logprobs is not None:
        logprobs = tuple(
            _token_logprob(token_id, position, request.top_logprobs)
            for token_id, position in zip(sample.token_ids, sample.logprobs)
        )
    return Completion(
        text=sample.text,
        prompt_tokens=len(output.prompt_token_ids or ()),
        completion_tokens=len(sample.token_ids),
        logprobs=logprobs if request.logprobs else None,
        finish_reason=sample.finish_reason or "stop",
        latency_s=latency_s,
        summary=None if not (summaries and logprobs) else from_texts([t.logprob for t in logprobs],
                                                                     [t.token for t in logprobs], sample.text),
    )


def _token_logprob(token_id: int, position: Mapping[int, Any], top: int) -> TokenLogprob:
    """One generated token from its position's ``{token_id: Logprob}`` (top-k plus the sampled one)."""
    chosen = position[token_id]
    ranked = sorted(position.values(), key=lambda lp: lp.logprob, reverse=True)[:top]
    return TokenLogprob(
        token=chosen.decoded_token or "",
        logprob=float(chosen.logprob),
        top=tuple((lp.decoded_token or "", float(lp.logprob)) for lp in ranked),
    )
