"""The in-process llama.cpp backend on SmolLM2-135M: batching, seeded sampling, logprobs, stops, limits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from deliberation.backends import Backend, make_backend
from deliberation.backends.llamacpp import DEFAULT_N_CTX, LlamaCppBackend, _changed_settings
from deliberation.backends.llamacpp_sequence import TAIL_NATS, sample
from deliberation.errors import DelibError, Interrupted
from deliberation.types import GenerationRequest, Message

pytestmark = pytest.mark.integration

QUESTIONS = ("What is 2+3?", "Name three colors.", "Write one sentence about the sea.")
# ~550 prompt tokens: a multi-chunk prefill (n_batch 256) and 512+ KV cells, where llama.cpp's CPU
# kernels depend on the batch shape.
LONG = "Here is a note about cats, dogs and birds in the garden. " * 40 + "Which animals are mentioned?"


def ask(question: str, **kwargs) -> GenerationRequest:
    options = {"max_tokens": 24, "temperature": 0.0, "seed": 1, **kwargs}
    return GenerationRequest(messages=(Message("user", question),), **options)


@pytest.fixture(scope="module")
def backend(smollm2_path: Path):
    b = LlamaCppBackend("smollm2-135m", n_ctx=1024, n_batch=256, max_parallel=4)
    yield b
    b.close()


def test_issue_snippet_works_as_written(smollm2_path: Path) -> None:
    b = make_backend("llamacpp", model="smollm2-135m")
    try:
        [c] = b.generate(
            [GenerationRequest(messages=(Message("user", "What is 2+3?"),), max_tokens=16, temperature=0.0, seed=1)]
        )
    finally:
        b.close()
    assert isinstance(b, Backend) and b.name == "llamacpp" and b.model == "smollm2-135m"
    assert c.text.strip() and c.prompt_tokens > 0 and 0 < c.completion_tokens <= 16
    assert c.finish_reason in ("stop", "length") and c.latency_s > 0


def test_batch_returns_one_completion_per_request_with_exact_counts(backend: LlamaCppBackend) -> None:
    requests = [ask(q) for q in QUESTIONS]
    completions = backend.generate(requests)
    assert len(completions) == 3
    for request, c in zip(requests, completions):
        assert c.prompt_tokens == len(backend.prompt_tokens(request))
        assert 0 < c.completion_tokens <= request.max_tokens and c.text


def test_same_seeds_give_identical_outputs(backend: LlamaCppBackend) -> None:
    requests = [ask(q, temperature=0.7, seed=i) for i, q in enumerate(QUESTIONS)]
    assert [c.text for c in backend.generate(requests)] == [c.text for c in backend.generate(requests)]


def test_different_seeds_sample_differently(backend: LlamaCppBackend) -> None:
    requests = [ask("Write a short poem about a cat.", temperature=0.7, seed=s) for s in range(4)]
    assert len({c.text for c in backend.generate(requests)}) > 1


def test_first_token_is_batch_independent(backend: LlamaCppBackend) -> None:
    """Guaranteed for every model: prompts are read alone, so the first token's logprobs (a critic's
    Yes/No) are bitwise the same in any batch, long prompts included."""
    requests = [ask(q, logprobs=True, top_logprobs=5) for q in (*QUESTIONS, LONG)]
    batched = backend.generate(requests)
    alone = [backend.generate([r])[0] for r in requests]
    assert batched[3].prompt_tokens > 512
    assert [c.logprobs[0] for c in batched] == [c.logprobs[0] for c in alone]


@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_short_sequences_batched_equal_alone(backend: LlamaCppBackend, temperature: float) -> None:
    """Holds for SmolLM2 Q4_1 on short sequences (row-independent kernels); not for every model, see
    the module docstring of deliberation.backends.llamacpp."""
    requests = [ask(q, temperature=temperature, seed=i) for i, q in enumerate(QUESTIONS)]
    batched = backend.generate(requests)
    alone = [backend.generate([r])[0] for r in requests]
    assert [c.text for c in batched] == [c.text for c in alone]
    assert [c.completion_tokens for c in batched] == [c.completion_tokens for c in alone]


def test_more_requests_than_max_parallel_keep_order(backend: LlamaCppBackend) -> None:
    requests = [ask(q, seed=i, temperature=0.7) for i, q in enumerate(QUESTIONS * 2)]  # 6 > max_parallel 4
    batched = backend.generate(requests)
    assert [c.text for c in batched] == [backend.generate([r])[0].text for r in requests]
    # latencies count from the start of the call, so the second wave's come after the whole first wave
    assert min(c.latency_s for c in batched[4:]) > max(c.latency_s for c in batched[:4]) > 0


def test_requests_of_fewest_max_tokens_wave_together_and_come_back_in_order(backend: LlamaCppBackend) -> None:
    """A coalesced batch of long samples and one-token critic calls: the short ones fill a wave of their own
    (before the long ones) instead of holding slots of a long wave; the answers come back in request order."""
    long = [ask(q, seed=i, temperature=0.7, max_tokens=24) for i, q in enumerate(QUESTIONS + QUESTIONS[:1])]
    short = [ask(q, max_tokens=1) for q in QUESTIONS + QUESTIONS[:1]]
    mixed = [r for pair in zip(long, short) for r in pair]  # long, short, long, short, ... (8 > max_parallel 4)
    out = backend.generate(mixed)
    assert [c.completion_tokens for c in out[1::2]] == [1] * 4
    assert [c.text for c in out[0::2]] == [c.text for c in backend.generate(long)]  # the long ones: one wave, as alone
    assert max(c.latency_s for c in out[1::2]) < min(c.latency_s for c in out[0::2])  # the short wave ran first


def test_identical_prompts_are_read_once_and_sample_as_if_read_alone(
    backend: LlamaCppBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Round 0 sends every agent the same prompt: it is read once per call (across waves too), and each
    copy samples exactly what it samples when its prompt is read on its own."""
    requests = [ask(QUESTIONS[2], temperature=0.7, seed=s) for s in range(6)] + [ask(QUESTIONS[0])]
    alone = [backend.generate([r])[0] for r in requests]
    reads: list[int] = []
    prefill = backend._rt.prefill
    monkeypatch.setattr(backend._rt, "prefill",
                        lambda prompt, *rest: reads.append(len(prompt)) or prefill(prompt, *rest))
    batched = backend.generate(requests)  # 7 requests > max_parallel 4: two waves
    assert len(reads) == 2
    assert [c.text for c in batched] == [c.text for c in alone]


def test_logprobs_with_sorted_top_alternatives(backend: LlamaCppBackend) -> None:
    [c] = backend.generate([ask("What is 2+3?", logprobs=True, top_logprobs=3)])
    assert c.logprobs is not None and len(c.logprobs) == c.completion_tokens
    for lp in c.logprobs:
        assert lp.logprob <= 0 and len(lp.top) == 3
        assert [t[1] for t in lp.top] == sorted((t[1] for t in lp.top), reverse=True)
        assert lp.top[0] == (lp.token, lp.logprob)  # greedy picks the most likely token
    assert "".join(lp.token for lp in c.logprobs).startswith(c.text)


def test_no_logprobs_unless_asked(backend: LlamaCppBackend) -> None:
    assert backend.generate([ask("What is 2+3?")])[0].logprobs is None


def test_max_tokens_is_respected(backend: LlamaCppBackend) -> None:
    [c] = backend.generate([ask("Tell me a long story about a dragon.", max_tokens=5)])
    assert c.completion_tokens == 5 and c.finish_reason == "length"


def test_stop_string_cuts_the_text(backend: LlamaCppBackend) -> None:
    question = "Tell me a long story about a dragon."
    full = backend.generate([ask(question)])[0]
    stop = full.text[6:9]
    [c] = backend.generate([ask(question, stop=(stop,))])
    assert c.finish_reason == "stop" and c.text == full.text[: full.text.find(stop)]
    assert c.completion_tokens < full.completion_tokens  # tokens against tokens: generation ended at the stop


def test_generate_after_close_is_refused(smollm2_path: Path) -> None:
    b = LlamaCppBackend("smollm2-135m", n_ctx=256, max_parallel=1)
    b.close()
    with pytest.raises(DelibError, match="closed"):
        b.generate([ask("hi")])


def test_interrupt_stops_a_running_generate_at_its_next_step(smollm2_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    b = LlamaCppBackend("smollm2-135m", n_ctx=512, max_parallel=2)
    steps = []
    step = b._rt.step

    def counted(entries):  # interrupt from "another thread" after three decode steps
        steps.append(len(entries))
        if len(steps) == 3:
            b.interrupt()
        return step(entries)

    monkeypatch.setattr(b._rt, "step", counted)
    long = [ask(q, max_tokens=200, temperature=0.7, seed=i) for i, q in enumerate(QUESTIONS[1:])]
    with pytest.raises(Interrupted, match="interrupted"):
        b.generate(long)
    assert steps == [2, 2, 2]  # the step in progress finished, no fourth began
    with pytest.raises(Interrupted):  # sticky: later calls stop before reading their prompts
        b.generate([ask("hi")])
    assert len(steps) == 3
    b.close()  # the lock was released: close does not wait


def test_cache_scope_keys_a_window_or_template_off_the_defaults(backend: LlamaCppBackend) -> None:
    """A smaller n_ctx can cut answers short and another template is another prompt: neither may be served
    answers cached at the defaults, whose scope stays the bare model name (existing caches stay valid)."""
    assert backend.cache_scope == "smollm2-135m (n_ctx=1024)"
    assert _changed_settings(DEFAULT_N_CTX, None) == {}
    one, other = _changed_settings(DEFAULT_N_CTX, "{{ a }}"), _changed_settings(DEFAULT_N_CTX, "{{ b }}")
    assert set(one) == {"chat_format"} and one != other


def _full_vocabulary_sample(logits: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """The sampler before the tail cut: inverse CDF over every token, in float64."""
    z = logits.astype(np.float64) / temperature
    cdf = np.cumsum(np.exp(z - z.max()))
    return int(min(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"), len(cdf) - 1))


@pytest.mark.parametrize("scale", [1.0, 4.0, 12.0])
def test_sampler_draws_what_the_full_vocabulary_sampler_draws(scale: float) -> None:
    """Cutting tokens TAIL_NATS below the best changes no draw: same generator state, same token."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        logits = (rng.normal(size=4096) * scale).astype(np.float32)  # [vocab]
        state = rng.bit_generator.state
        ours = sample(logits, 0.7, rng)
        rng.bit_generator.state = state
        assert ours == _full_vocabulary_sample(logits, 0.7, rng)


def test_sampler_follows_the_softmax_and_never_draws_the_far_tail() -> None:
    logits = np.array([2.0, 1.0, 0.0, 2.0 - TAIL_NATS * 0.7 - 1.0], dtype=np.float32)
    rng = np.random.default_rng(0)
    counts = np.bincount([sample(logits, 0.7, rng) for _ in range(20000)], minlength=4)
    expected = np.exp(logits[:3] / 0.7) / np.exp(logits[:3] / 0.7).sum()
    assert counts[3] == 0 and np.allclose(counts[:3] / 20000, expected, atol=0.015)
    assert sample(logits, 0.0, rng) == 0


def test_every_completion_carries_a_log_probability_summary(backend: LlamaCppBackend) -> None:
    """The summary is made from the logits the backend samples from: with logprobs asked for, its mean and
    tail equal the per-token log-probabilities; without, the same text gives the same summary."""
    asked = backend.generate([ask("Name three colors.", logprobs=True, max_tokens=40)])[0]
    plain = backend.generate([ask("Name three colors.", max_tokens=40)])[0]
    assert asked.text == plain.text and asked.summary == plain.summary and plain.summary is not None
    values = [lp.logprob for lp in asked.logprobs]
    assert plain.summary.mean == pytest.approx(np.mean(values), abs=1e-4)
    assert plain.summary.tail == pytest.approx(values[-64:], abs=1e-4)
    assert plain.summary.lowest_window <= plain.summary.mean <= 0
    assert plain.summary.tail_bounds[-1] == len(plain.text)
