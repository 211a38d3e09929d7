"""The vLLM backend without vLLM (CUDA-only): the output mapping on objects shaped like vLLM's
RequestOutput / CompletionOutput / Logprob, the SamplingParams mapping, one ``LLM.chat`` call per batch
through a fake ``vllm`` module, and the install hint when vLLM is missing."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from deliberation.backends import make_backend
from deliberation.backends.vllm import VLLMBackend, completion_from_output, sampling_kwargs
from deliberation.errors import DelibError
from deliberation.types import GenerationRequest, Message


def lp(logprob: float, rank: int, token: str) -> SimpleNamespace:
    return SimpleNamespace(logprob=logprob, rank=rank, decoded_token=token)


def request_output(text: str = "Yes.", logprobs: list | None = None) -> SimpleNamespace:
    sample = SimpleNamespace(index=0, text=text, token_ids=[11, 12], finish_reason="length", logprobs=logprobs)
    return SimpleNamespace(prompt="p", prompt_token_ids=[1, 2, 3, 4, 5], outputs=[sample], finished=True)


def req(**kw) -> GenerationRequest:
    return GenerationRequest(messages=(Message("user", "Is it right?"),), **kw)


def test_output_mapping_without_logprobs() -> None:
    out = completion_from_output(request_output(), req(), 0.5)
    assert (out.text, out.prompt_tokens, out.completion_tokens) == ("Yes.", 5, 2)
    assert (out.finish_reason, out.latency_s, out.logprobs, out.cached) == ("length", 0.5, None, False)


def test_output_mapping_with_logprobs_sampled_token_outside_top() -> None:
    positions = [
        {11: lp(-0.1, 1, "Yes"), 99: lp(-2.5, 2, "No")},
        # the sampled token 12 is rank 3: vLLM returns it in addition to the top-2
        {40: lp(-0.3, 1, "!"), 41: lp(-1.0, 2, "?"), 12: lp(-4.0, 3, ".")},
    ]
    out = completion_from_output(request_output(logprobs=positions), req(logprobs=True, top_logprobs=2), 0.0)
    assert [t.token for t in out.logprobs] == ["Yes", "."]
    assert [t.logprob for t in out.logprobs] == [-0.1, -4.0]
    assert out.logprobs[0].top == (("Yes", -0.1), ("No", -2.5))
    assert out.logprobs[1].top == (("!", -0.3), ("?", -1.0))


def test_sampling_kwargs() -> None:
    plain = sampling_kwargs(req(max_tokens=64, temperature=0.7, seed=3))
    assert plain == {"n": 1, "temperature": 0.7, "max_tokens": 64, "seed": 3, "stop": None, "logprobs": None,
                     "top_p": 1.0, "top_k": -1, "min_p": 0.0, "repetition_penalty": 1.0, "presence_penalty": 0.0,
                     "frequency_penalty": 0.0}  # plain sampling: nothing from the model's generation_config
    with_lp = sampling_kwargs(req(stop=("</s>",), logprobs=True, top_logprobs=5))
    assert with_lp["stop"] == ["</s>"] and with_lp["logprobs"] == 5


class FakeLLM:
    """Records its construction and every ``chat`` call; answers with canned RequestOutputs."""

    instances: list["FakeLLM"] = []

    def __init__(self, **kwargs) -> None:
        self.kwargs = kwargs
        self.calls: list[tuple] = []
        FakeLLM.instances.append(self)

    def chat(self, messages, sampling_params=None, use_tqdm=True):
        self.calls.append((messages, sampling_params, use_tqdm))
        return [request_output(text=f"answer {i}") for i in range(len(messages))]


def test_one_chat_call_per_batch_through_a_fake_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = SimpleNamespace(LLM=FakeLLM, SamplingParams=lambda **kw: SimpleNamespace(**kw))
    monkeypatch.setitem(sys.modules, "vllm", fake)
    backend = make_backend("vllm", model="org/model", max_model_len=4096, enforce_eager=True)
    assert isinstance(backend, VLLMBackend) and backend.model == "org/model"
    llm = FakeLLM.instances[-1]
    assert llm.kwargs == {
        "model": "org/model", "tensor_parallel_size": 1, "gpu_memory_utilization": 0.9,
        "max_model_len": 4096, "enforce_eager": True,
    }  # fmt: skip
    out = backend.generate([req(seed=1), req(seed=2)])
    assert [c.text for c in out] == ["answer 0", "answer 1"]
    messages, params, use_tqdm = llm.calls[0]
    assert len(llm.calls) == 1 and use_tqdm is False
    assert messages[0] == [{"role": "user", "content": "Is it right?"}]
    assert [p.seed for p in params] == [1, 2] and all(p.n == 1 for p in params)


def test_missing_vllm_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm raises ImportError
    with pytest.raises(DelibError, match=r"pip install -e '\.\[vllm\]'"):
        VLLMBackend("org/model")


def test_summaries_ride_on_the_sampled_tokens_log_probabilities(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM 0.10 on reports the raw logits' log-probabilities: every completion gets a summary (as llamacpp's
    do) while a request's own logprobs come back only when it asks; older versions record none."""
    tokens = [{11: lp(-0.25, 1, "Yes")}, {12: lp(-0.75, 1, ".")}]

    class Answering(FakeLLM):
        def chat(self, messages, sampling_params=None, use_tqdm=True):
            self.calls.append((messages, sampling_params, use_tqdm))
            return [request_output(text="Yes.", logprobs=tokens) for _ in messages]

    for version, summarized in (("0.11.1", True), ("0.9.2", False)):
        fake = SimpleNamespace(LLM=Answering, SamplingParams=lambda **kw: SimpleNamespace(**kw), __version__=version)
        monkeypatch.setitem(sys.modules, "vllm", fake)
        backend = make_backend("vllm", model="org/model")
        out = backend.generate([req(seed=1)])[0]
        assert Answering.instances[-1].calls[0][1][0].logprobs == (0 if summarized else None)
        assert out.logprobs is None
        assert (out.summary is not None) == summarized
    assert sampling_kwargs(req(), summaries=True)["logprobs"] == 0
    summary = completion_from_output(request_output("Yes.", tokens), req(), 0.1, summaries=True).summary
    assert (summary.mean, summary.tail_bounds) == (-0.5, (0, 3, 4))
