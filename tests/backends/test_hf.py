"""The transformers backend on a tiny random Llama built here (no hub access): exact token counts,
batched greedy equals solo greedy, per-request seeds, stop strings, logprobs, and clear errors.

On a machine with a GPU, ``DELIB_TEST_DEVICE=cuda`` runs the same tests with the model on it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from deliberation.backends import make_backend
from deliberation.backends.hf import HFBackend, plain_prompt
from deliberation.errors import DelibError
from deliberation.types import GenerationRequest, Message

DEVICE = os.environ.get("DELIB_TEST_DEVICE", "cpu")
SENTENCES = [
    "the cat sat on the mat",
    "a dog ran in the park",
    "two plus two is four",
    "what is the answer to the question",
    "user assistant system : yes no",
]
TEMPLATE = (
    "{% for m in messages %}<s> {{ m['role'] }} : {{ m['content'] }} </s> {% endfor %}"
    "{% if add_generation_prompt %}<s> assistant : {% endif %}"
)


def build_tiny_model(folder: Path, chat_template: str | None) -> Path:
    """A 2-layer Llama with a word-level tokenizer over SENTENCES, saved like a downloaded model."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = sorted({w for s in SENTENCES for w in s.split()})
    vocab = {tok: i for i, tok in enumerate(["<unk>", "<s>", "</s>", "<pad>", *words])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    tokenizer.chat_template = chat_template
    config = LlamaConfig(
        vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        bos_token_id=1, eos_token_id=2, pad_token_id=3,
    )  # fmt: skip
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def plain_model(tmp_path_factory: pytest.TempPathFactory) -> HFBackend:
    return HFBackend(str(build_tiny_model(tmp_path_factory.mktemp("plain"), None)), device=DEVICE)


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory: pytest.TempPathFactory) -> HFBackend:
    return HFBackend(str(build_tiny_model(tmp_path_factory.mktemp("chat"), TEMPLATE)), device=DEVICE)


def req(content: str, **kw) -> GenerationRequest:
    options = {"max_tokens": 12, "temperature": 0.0, **kw}
    return GenerationRequest(messages=(Message("user", content),), **options)


def test_plain_prompt_token_counts_are_exact(plain_model: HFBackend) -> None:
    request = req("the cat sat", logprobs=True)
    out = plain_model.generate([request])[0]
    expected_prompt = plain_model._tokenizer(plain_prompt(request))["input_ids"]
    assert plain_prompt(request) == "user: the cat sat\nassistant:"
    assert out.prompt_tokens == len(expected_prompt)
    assert out.completion_tokens == len(out.logprobs) <= 12
    assert out.finish_reason in ("stop", "length")


def test_chat_template_is_applied(chat_model: HFBackend) -> None:
    out = chat_model.generate([req("two plus two")])[0]
    # "<s> user : two plus two </s> <s> assistant :" -> 10 word-level tokens
    assert out.prompt_tokens == 10


def test_batched_greedy_equals_each_request_alone(chat_model: HFBackend) -> None:
    requests = [req("the cat"), req("a dog ran in the park today", max_tokens=5), req("what is the answer")]
    batched = chat_model.generate(requests)
    alone = [chat_model.generate([r])[0] for r in requests]
    assert [c.text for c in batched] == [c.text for c in alone]
    assert [c.completion_tokens for c in batched] == [c.completion_tokens for c in alone]
    assert batched[1].completion_tokens <= 5


def test_same_seed_same_sample_and_caller_rng_untouched(chat_model: HFBackend) -> None:
    import torch

    gpu = torch.cuda.is_available() and DEVICE != "cpu"
    state, gpu_state = torch.get_rng_state(), torch.cuda.get_rng_state() if gpu else None
    sampled = [req("the cat", temperature=1.0, seed=s, max_tokens=16) for s in (7, 8, 7)]
    first, other, again = chat_model.generate(sampled)
    assert first.text == again.text
    assert first.text != other.text  # 16 draws from ~30 words: a collision would be a seeding bug
    assert torch.equal(state, torch.get_rng_state())
    assert not gpu or torch.equal(gpu_state, torch.cuda.get_rng_state())


def test_logprobs_with_top_alternatives(chat_model: HFBackend) -> None:
    out = chat_model.generate([req("yes or no", logprobs=True, top_logprobs=3)])[0]
    assert out.logprobs and len(out.logprobs) == out.completion_tokens
    for entry in out.logprobs:
        values = [v for _, v in entry.top]
        assert len(entry.top) == 3 and values == sorted(values, reverse=True)
        assert entry.logprob <= 0.0
        assert entry.token == entry.top[0][0] and entry.logprob == pytest.approx(values[0])  # greedy


def test_stop_string_cuts_text_and_counts(chat_model: HFBackend) -> None:
    full = chat_model.generate([req("the question", max_tokens=16)])[0]
    words = full.text.split()
    assert len(words) >= 4, f"the tiny model should produce a few words, got {full.text!r}"
    stop = " " + words[2]
    cut = chat_model.generate([req("the question", max_tokens=16, stop=(stop,))])[0]
    assert cut.text == full.text[: full.text.index(stop)]
    assert cut.finish_reason == "stop" and cut.completion_tokens < full.completion_tokens


def test_registry_and_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DelibError, match="no config.json"):
        make_backend("hf", model=str(tmp_path / "absent"))
    (tmp_path / "config.json").write_text("{}")
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(DelibError, match=r"pip install -e '\.\[hf\]'"):
        HFBackend(str(tmp_path))


def test_batch_with_different_stops_matches_each_alone(chat_model: HFBackend) -> None:
    full = chat_model.generate([req("the question", max_tokens=16)])[0]
    stop = " " + full.text.split()[2]
    requests = [req("the question", max_tokens=16, stop=(stop,)), req("the question", max_tokens=16)]
    batched = chat_model.generate(requests)
    assert batched[0].text == chat_model.generate([requests[0]])[0].text == full.text[: full.text.index(stop)]
    assert batched[1].text == full.text  # the other row's stop does not end this one


def test_a_model_generation_config_changes_nothing(chat_model: HFBackend, tmp_path: Path) -> None:
    """Sampling is plain temperature sampling on every backend: the repetition penalty, top-k and top-p a
    model folder's generation_config.json sets (Qwen2.5's do) are not applied, greedy or sampled."""
    import json
    import shutil

    from transformers import AutoModelForCausalLM

    folder = Path(shutil.copytree(chat_model.model, tmp_path / "with-extras"))
    config = json.loads((folder / "generation_config.json").read_text())
    extras = {"repetition_penalty": 5.0, "top_k": 2, "top_p": 0.3, "no_repeat_ngram_size": 1, "do_sample": True,
              "num_beams": 3, "use_cache": False}
    (folder / "generation_config.json").write_text(json.dumps({**config, **extras}))
    requests = [req("the cat", max_tokens=16), req("the cat", temperature=1.0, seed=3, max_tokens=16)]
    extended = HFBackend(str(folder), device=DEVICE)
    assert [c.text for c in extended.generate(requests)] == [c.text for c in chat_model.generate(requests)]
    # Responses cached before, with the extras applied, are not served: the scope says they are ignored now.
    assert extended.cache_scope == f"{folder} (generation_config=ignored)"
    assert extended._lm.generation_config.use_cache is False  # a setting that changes no answer stays
    assert chat_model.cache_scope == chat_model.model
    # The extras would change the greedy answer if applied: the check above can fail.
    lm = AutoModelForCausalLM.from_pretrained(folder).to(DEVICE)
    prompt = chat_model._tokenizer.apply_chat_template([{"role": "user", "content": "the cat"}],
                                                       add_generation_prompt=True, return_dict=True)
    ids = lm.generate(torch_tensor([prompt["input_ids"]], DEVICE), max_new_tokens=16, do_sample=False, top_k=None,
                      top_p=None, pad_token_id=3)
    applied = chat_model._tokenizer.decode(ids[0, len(prompt["input_ids"]):], skip_special_tokens=True)
    assert applied != chat_model.generate(requests[:1])[0].text


def torch_tensor(values: list, device: str):
    import torch

    return torch.tensor(values, device=device)


def test_cache_scope_names_a_dtype_other_than_float32(plain_model: HFBackend) -> None:
    """Half precision gives other answers: the cache must not serve it the float32 ones (nor the reverse)."""
    assert plain_model.cache_scope == plain_model.model
    half = HFBackend(plain_model.model, dtype="bfloat16", device=DEVICE)
    assert half.cache_scope == f"{plain_model.model} (dtype=bfloat16)"



def _direct_ids(backend: HFBackend, request: GenerationRequest) -> list[int]:
    """The tokens transformers' own ``generate`` gives for ``request`` (greedy, or its temperature sampling
    under the request's seed), without the backend's logits processors."""
    import torch

    prompt = torch_tensor([backend._prompt_ids(request)], DEVICE)  # [1, T]
    sampling = {"do_sample": True, "temperature": request.temperature, "top_k": 0, "top_p": 1.0}
    greedy = {"do_sample": False, "temperature": None, "top_k": None, "top_p": None}
    torch.manual_seed(request.seed)
    ids = backend._lm.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=request.max_tokens,
                               pad_token_id=3, **(sampling if request.temperature > 0 else greedy))
    return ids[0, prompt.shape[1] :].tolist()


def _forward_logprobs(backend: HFBackend, request: GenerationRequest, generated: list[int],
                      temperature: float = 1.0) -> list[float]:
    """Each generated token's log-probability under the raw logits (divided by ``temperature``), from one
    fresh forward pass over the prompt and ``generated`` (independent of generate's processors)."""
    import torch

    prompt = backend._prompt_ids(request)
    ids = torch_tensor([prompt + generated], DEVICE)  # [1, T + N]
    with torch.inference_mode():
        logits = backend._lm(ids).logits[0, len(prompt) - 1 : -1].float()  # [N, V]
    logp = torch.log_softmax(logits / temperature, dim=-1)  # [N, V]
    return logp.gather(1, torch_tensor(generated, DEVICE)[:, None])[:, 0].tolist()


def test_every_completion_summarizes_its_raw_log_probabilities(chat_model: HFBackend) -> None:
    """Sampled at temperature 0.5, greedy, and cut at a stop string: each summary is that of the tokens'
    log-probabilities under the raw logits (a forward pass of its own says which), not the tempered ones."""
    from deliberation.backends.logprob_summary import from_texts

    full = chat_model.generate([req("the question", max_tokens=16)])[0]
    requests = [req("the cat", temperature=0.5, seed=4, max_tokens=16), req("a dog", max_tokens=16),
                req("the question", max_tokens=16, stop=(" " + full.text.split()[2],))]
    for request, out in zip(requests, chat_model.generate(requests)):
        ids = _direct_ids(chat_model, request)[: out.completion_tokens]
        assert out.summary is not None and len(ids) == out.completion_tokens >= 2
        pieces = chat_model._tokenizer.batch_decode([[t] for t in ids], skip_special_tokens=True)
        expected = _forward_logprobs(chat_model, request, ids)
        reference = from_texts(expected, pieces, out.text)
        assert out.summary.tail_bounds == reference.tail_bounds
        assert out.summary.tail == pytest.approx(reference.tail, abs=2e-4)
        assert out.summary.mean == pytest.approx(reference.mean, abs=2e-4)
        assert out.summary.lowest_window == pytest.approx(reference.lowest_window, abs=2e-4)
        assert out.summary.tail_bounds[-1] <= len(out.text)
    sampled = chat_model.generate(requests[:1])[0]
    ids = _direct_ids(chat_model, requests[0])[: sampled.completion_tokens]
    pieces = chat_model._tokenizer.batch_decode([[t] for t in ids], skip_special_tokens=True)
    tempered = from_texts(_forward_logprobs(chat_model, requests[0], ids, temperature=0.5), pieces, sampled.text)
    assert abs(tempered.mean - sampled.summary.mean) > 1e-2  # the check above tells raw from tempered


def test_recording_log_probabilities_changes_no_sample(chat_model: HFBackend) -> None:
    """The recorder runs before the temperature warper: what is sampled is what generate's own temperature
    sampling gives under the same seed (as before summaries were recorded), greedy too."""
    for request in (req("the cat", temperature=0.7, seed=5, max_tokens=16),
                    req("the cat", temperature=1.3, seed=6, max_tokens=16), req("a dog", max_tokens=16)):
        out = chat_model.generate([request])[0]
        ids = _direct_ids(chat_model, request)[: out.completion_tokens]
        assert out.text == chat_model._tokenizer.decode(ids, skip_special_tokens=True)
