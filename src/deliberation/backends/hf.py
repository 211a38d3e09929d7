"""A backend on Hugging Face transformers, for a model folder on local disk (never the hub).

Why: any architecture transformers supports, on CPU or GPU, without a GGUF conversion; 4-7x slower
than llama.cpp on CPU (docs/design.md, section Models and speed), so it is the fallback, not the default.

Sampling is plain: softmax(logits / temperature), as llamacpp and vllm sample. A model folder's
generation_config.json often sets more (Qwen2.5's: repetition_penalty 1.1, top_k 20, top_p 0.8), and
``generate`` applies whatever the model's config sets and the call leaves at transformers' defaults, so every
decoding setting of the model's config is reset at load (``DECODING``; a model whose config changed answers
that way gets its own cache scope: what was cached with those settings is not served).

Prompt: the tokenizer's chat template when it has one, else the plain "role: content" lines followed
by "assistant:". Batching and seeds: ``generate`` in transformers draws from the one global torch RNG,
so a batch cannot give each row its own seed. Greedy requests (temperature 0) need no RNG and run in
left-padded batches of ``batch_size``; sampled requests run one at a time under
``torch.manual_seed(request.seed)`` inside ``torch.random.fork_rng`` so the caller's RNG state is left
untouched. A batched greedy row equals the same request run alone up to float rounding of the padded
attention.

Logprobs are the log-softmax of the raw logits (``output_logits``), i.e. the model's own distribution
before temperature, as OpenAI-compatible servers report them. Every completion carries a log-probability
summary (``logprob_summary``), as llamacpp's and vllm's do, from the same raw log-probabilities
(``ChosenLogprobs``: one log-softmax a step, next to the forward pass it follows). Token counts are exact: the prompt's
token ids, and the generated ids up to (not including) the end-of-sequence token, the end of the
first stop string, or ``max_tokens``.
"""

from __future__ import annotations

import contextlib
import copy
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from deliberation.backends.base import cache_scope
from deliberation.backends.logprob_summary import from_texts
from deliberation.errors import DelibError, install_hint
from deliberation.types import Completion, GenerationRequest, TokenLogprob


def import_transformers() -> tuple[Any, Any]:
    """(transformers, torch), or a DelibError with the install hint."""
    try:
        import torch
        import transformers
    except ImportError as err:
        raise DelibError(install_hint("transformers", "hf")) from err
    return transformers, torch


class HFBackend:
    """transformers ``AutoModelForCausalLM`` from the local folder ``model``."""

    name = "hf"
    supports_logprobs = True

    def __init__(self, model: str, device: str = "cpu", dtype: str = "float32", batch_size: int = 8) -> None:
        folder = Path(model).expanduser()
        if not (folder / "config.json").is_file():
            raise DelibError(
                f"{model} is not a local transformers model folder (no config.json); download one with "
                "`huggingface-cli download <repo> --local-dir <folder>` and pass that folder"
            )
        transformers, self._torch = import_transformers()
        self._processors = transformers.LogitsProcessorList, transformers.TemperatureLogitsWarper
        torch_dtype = getattr(self._torch, dtype, None)
        if not isinstance(torch_dtype, self._torch.dtype):
            raise DelibError(f"unknown dtype {dtype!r}; use float32, bfloat16 or float16")
        self.model = model
        self.batch_size = max(1, batch_size)
        self._device = self._torch.device(device)
        self._tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
        dtype_option = {_dtype_keyword(transformers.__version__): torch_dtype}
        lm = transformers.AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, **dtype_option)
        self._lm = lm.to(self._device).eval()
        self._eos_ids = _eos_ids(self._tokenizer, self._lm.generation_config)
        self._pad_id = _first_not_none(self._tokenizer.pad_token_id, min(self._eos_ids, default=0))
        plain, dropped = _plain(transformers, self._lm.generation_config, sorted(self._eos_ids), self._pad_id)
        self._lm.generation_config = plain  # plain sampling: see the module docstring
        self.cache_scope = cache_scope(model, **({"dtype": dtype} if dtype != "float32" else {}),
                                       **({"generation_config": "ignored"} if dropped else {}))

    @staticmethod
    def records_summaries(**_: Any) -> bool:
        """Every completion carries its summary (``ChosenLogprobs``)."""
        return True

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """One Completion per request, in order (greedy ones batched, sampled ones one by one)."""
        results: dict[int, Completion] = {}
        start = time.perf_counter()  # latencies count from here: sampled requests run one after another
        for indices in self._schedule(requests):
            batch = [requests[i] for i in indices]
            results.update(zip(indices, self._run(batch, start)))
        return [results[i] for i in range(len(requests))]

    def close(self) -> None:
        """Drop the model so its memory can be freed."""
        self._lm = None

    # --- internals ---------------------------------------------------------------------------------

    def _schedule(self, requests: Sequence[GenerationRequest]) -> Iterator[list[int]]:
        """Index groups to run together: greedy requests in chunks of ``batch_size``, sampled ones alone."""
        greedy = [i for i, r in enumerate(requests) if r.temperature <= 0]
        yield from (greedy[k : k + self.batch_size] for k in range(0, len(greedy), self.batch_size))
        yield from ([i] for i, r in enumerate(requests) if r.temperature > 0)

    def _run(self, batch: list[GenerationRequest], call_start: float) -> list[Completion]:
        """Generate for ``batch``: one sampled request, or a chunk of greedy ones (each with its own stops)."""
        torch = self._torch
        prompts = [self._prompt_ids(r) for r in batch]
        input_ids, attention = _left_pad(torch, prompts, self._pad_id)  # [B, T], [B, T]
        recorder = ChosenLogprobs(torch)
        with torch.inference_mode(), self._seeded(batch[0]):
            out = self._lm.generate(
                input_ids=input_ids.to(self._device),
                attention_mask=attention.to(self._device),
                **self._generate_options(batch, input_ids.shape[1], recorder),
            )
            chosen = recorder.values(out.sequences)  # [B][N]
        latency = time.perf_counter() - call_start
        new_ids = out.sequences[:, input_ids.shape[1] :].cpu()  # [B, N]
        # Raw logits only when some request wants logprobs: [B, N, V] is large for big vocabularies.
        logits = torch.stack(out.logits, dim=1).float().cpu() if out.logits else None  # [B, N, V]
        return [
            self._completion(r, len(p), new_ids[b].tolist(), chosen[b], None if logits is None else logits[b],
                             latency)
            for b, (r, p) in enumerate(zip(batch, prompts))
        ]

    def _generate_options(self, batch: list[GenerationRequest], prompt_width: int,
                          recorder: ChosenLogprobs) -> dict[str, Any]:
        """Keyword arguments of ``generate``. Sampling is plain temperature sampling (no top-k/top-p),
        as the other backends do; a greedy batch runs to the longest ``max_tokens`` and is cut per row.
        ``recorder`` sees the raw logits: temperature is applied after it, by the same warper ``generate``
        would make (which is therefore told 1.0)."""
        first = batch[0]
        processor_list, temperature_warper = self._processors
        processors = [recorder]
        options: dict[str, Any] = {
            "max_new_tokens": max(r.max_tokens for r in batch),
            "pad_token_id": self._pad_id,
            "return_dict_in_generate": True,
            "output_logits": any(r.logprobs for r in batch),
        }
        if first.temperature > 0:
            options.update(do_sample=True, temperature=1.0, top_k=0, top_p=1.0)
            processors.append(temperature_warper(first.temperature))
        else:
            options.update(do_sample=False, temperature=None, top_k=None, top_p=None)
        options["logits_processor"] = processor_list(processors)
        if any(r.stop for r in batch):
            options["stopping_criteria"] = [StopStrings(self._tokenizer, prompt_width, [r.stop for r in batch])]
        return options

    @contextlib.contextmanager
    def _seeded(self, request: GenerationRequest) -> Iterator[None]:
        """Seed the global torch RNG with ``request.seed`` and restore the caller's state afterwards."""
        gpu = self._device.type != "cpu"
        devices = [self._device.index or 0] if gpu else []
        with self._torch.random.fork_rng(devices=devices, device_type=self._device.type if gpu else "cuda"):
            self._torch.manual_seed(request.seed)
            yield

    def _prompt_ids(self, request: GenerationRequest) -> list[int]:
        """Token ids of the prompt: the chat template if the tokenizer has one, else plain lines. The template's
        output is asked for as a dict: transformers 5 returns one by default, 4.x a bare list."""
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        if self._tokenizer.chat_template:
            encoded = self._tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=True)
            return list(encoded["input_ids"])
        return list(self._tokenizer(plain_prompt(request))["input_ids"])

    def _completion(self, request: GenerationRequest, prompt_tokens: int, ids: list[int], chosen: list[float],
                    logits: Any, latency: float) -> Completion:
        """Cut ``ids`` at eos / stop / max_tokens and build the Completion. ``chosen``: each generated token's
        log-probability; ``logits``: [N, V] or None."""
        n, finish = _cut_at_eos(ids[: request.max_tokens], self._eos_ids, len(ids) >= request.max_tokens)
        text = self._tokenizer.decode(ids[:n], skip_special_tokens=True)
        if request.stop and any(s in text for s in request.stop):
            n, text = self._cut_at_stop(ids[:n], request.stop)
            finish = "stop"
        logprobs = self._logprobs(ids[:n], logits[:n], request.top_logprobs) if request.logprobs else None
        pieces = self._tokenizer.batch_decode([[t] for t in ids[:n]], skip_special_tokens=True)
        summary = from_texts(chosen[:n], pieces, text)
        return Completion(text, prompt_tokens, n, logprobs, finish, latency, summary=summary)

    def _cut_at_stop(self, ids: list[int], stops: tuple[str, ...]) -> tuple[int, str]:
        """(length of the shortest prefix of ``ids`` whose text contains a stop, the text before it).
        The caller has checked that the full text contains one."""
        for k in range(1, len(ids) + 1):
            prefix = self._tokenizer.decode(ids[:k], skip_special_tokens=True)
            hits = [prefix.index(s) for s in stops if s in prefix]
            if hits:
                return k, prefix[: min(hits)]
        raise AssertionError("unreachable: the full text contains a stop string")

    def _logprobs(self, ids: list[int], logits: Any, top: int) -> tuple[TokenLogprob, ...]:
        """Per generated token: its logprob and the ``top`` most likely alternatives. ``logits``: [n, V]."""
        logp = self._torch.log_softmax(logits, dim=-1)  # [n, V]
        top_lp, top_ids = logp.topk(min(top, logp.shape[-1]), dim=-1)  # [n, top], [n, top]
        decode = self._tokenizer.decode
        return tuple(
            TokenLogprob(
                token=decode([tok]),
                logprob=float(logp[i, tok]),
                top=tuple((decode([a]), v) for a, v in zip(top_ids[i].tolist(), top_lp[i].tolist())),
            )
            for i, tok in enumerate(ids)
        )


class ChosenLogprobs:
    """A logits processor recording each generated token's log-probability under the raw logits (before
    temperature), as log-probability summaries are defined. It runs first (the plain generation config makes
    ``generate`` add no processor of its own), keeps the step's log-softmax and reads the chosen token's entry
    at the next step, when that token has joined ``input_ids``; ``values`` reads the last one."""

    def __init__(self, torch: Any) -> None:
        self._torch = torch
        self._last: Any = None  # [B, V]: log-softmax of the step whose token is not read yet
        self._steps: list[Any] = []  # one [B] tensor per generated token

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        """``input_ids``: [B, T + t]; ``scores``: [B, V], returned untouched."""
        self._read(input_ids)
        self._last = self._torch.log_softmax(scores.float(), dim=-1)  # [B, V]
        return scores

    def values(self, sequences: Any) -> list[list[float]]:
        """Per row, every generated token's log-probability (``sequences``: [B, T + N], ``generate``'s output);
        a finished row's padding after its end is read too and cut with it."""
        self._read(sequences)
        if not self._steps:
            return [[] for _ in range(sequences.shape[0])]
        return self._torch.stack(self._steps, dim=1).cpu().tolist()  # [B, N]

    def _read(self, ids: Any) -> None:
        if self._last is not None:
            self._steps.append(self._last.gather(1, ids[:, -1:]).squeeze(1))  # [B]
            self._last = None


class StopStrings:
    """A transformers stopping criterion: row b is done once its generated text contains one of
    ``stops[b]``. transformers' own ``stop_strings`` shares one list across the batch and needs a
    tokenizer vocabulary it can clean up; decoding the generated part works per row with any tokenizer."""

    def __init__(self, tokenizer: Any, prompt_width: int, stops: list[tuple[str, ...]]) -> None:
        self._tokenizer = tokenizer
        self._width = prompt_width
        self._stops = stops

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        """``input_ids``: [B, T] (prompt then generated); returns a bool tensor [B]."""
        done = [self._hit(row[self._width :], stops) for row, stops in zip(input_ids.tolist(), self._stops)]
        return input_ids.new_tensor(done).bool()  # [B]

    def _hit(self, generated: list[int], stops: tuple[str, ...]) -> bool:
        if not stops:
            return False
        text = self._tokenizer.decode(generated, skip_special_tokens=True)
        return any(s in text for s in stops)


def plain_prompt(request: GenerationRequest) -> str:
    """The prompt for a tokenizer without a chat template: "role: content" lines, then "assistant:"."""
    lines = [f"{m.role}: {m.content}" for m in request.messages]
    return "\n".join(lines + ["assistant:"])


def _left_pad(torch: Any, prompts: list[list[int]], pad_id: int) -> tuple[Any, Any]:
    """Left-padded ids and attention mask, both [B, T] with T the longest prompt."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)  # [B, T]
    mask = torch.zeros((len(prompts), width), dtype=torch.long)  # [B, T]
    for b, p in enumerate(prompts):
        ids[b, width - len(p) :] = torch.tensor(p, dtype=torch.long)
        mask[b, width - len(p) :] = 1
    return ids, mask


def _cut_at_eos(ids: list[int], eos_ids: set[int], hit_limit: bool) -> tuple[int, str]:
    """(number of tokens before the first eos, finish reason)."""
    for i, tok in enumerate(ids):
        if tok in eos_ids:
            return i, "stop"
    return len(ids), "length" if hit_limit else "stop"


def _eos_ids(tokenizer: Any, generation_config: Any) -> set[int]:
    """Every end-of-sequence id the tokenizer or generation config declares."""
    declared = generation_config.eos_token_id
    ids = set(declared if isinstance(declared, list) else [declared])
    ids.add(tokenizer.eos_token_id)
    return {i for i in ids if i is not None}


DECODING = ("do_sample", "num_beams", "num_beam_groups", "penalty_alpha", "dola_layers", "temperature", "top_k",
            "top_p", "min_p", "top_h", "typical_p", "epsilon_cutoff", "eta_cutoff", "diversity_penalty",
            "repetition_penalty", "encoder_repetition_penalty", "length_penalty", "no_repeat_ngram_size",
            "encoder_no_repeat_ngram_size", "bad_words_ids", "force_words_ids", "renormalize_logits", "constraints",
            "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values", "exponential_decay_length_penalty",
            "suppress_tokens", "begin_suppress_tokens", "forced_decoder_ids", "sequence_bias", "token_healing",
            "guidance_scale", "watermarking_config", "min_length", "min_new_tokens", "max_length", "max_new_tokens",
            "early_stopping", "max_time", "stop_strings", "prompt_lookup_num_tokens")
"""Generation-config settings that choose the decoding strategy, reshape the logits or bound the length: a
model folder's are reset to transformers' defaults at load (the rest, a cache implementation say, stays)."""
ALWAYS_SET = frozenset({"do_sample", "temperature", "top_k", "top_p", "max_new_tokens", "max_length"})
"""Of ``DECODING``, those every ``generate`` call here sets itself (so a model's value never applied)."""


def _plain(transformers: Any, config: Any, eos_ids: list[int], pad_id: int) -> tuple[Any, list[str]]:
    """The model's generation config with every ``DECODING`` setting at transformers' default and the ids
    this backend stops and pads with; and the settings reset that had changed answers before (a model with
    any gets its own cache scope, so what was cached with them applied is never served as a plain sample)."""
    default, plain = transformers.GenerationConfig(), copy.deepcopy(config)
    found = [k for k in DECODING if hasattr(default, k)]
    dropped = [k for k in found if k not in ALWAYS_SET and getattr(config, k, None) != getattr(default, k)]
    for k in found:
        setattr(plain, k, getattr(default, k))
    plain.eos_token_id, plain.pad_token_id = eos_ids, pad_id
    return plain, dropped


def _dtype_keyword(version: str) -> str:
    """transformers 4.56 renamed ``torch_dtype`` to ``dtype`` (the old name warns there)."""
    from packaging.version import Version

    return "dtype" if Version(version) >= Version("4.56") else "torch_dtype"


def _first_not_none(*values: int | None) -> int:
    return next(v for v in values if v is not None)
