"""Tokens per second of the llamacpp backend: one batch of N requests against the same N one at a time.

Usage: PYTHONPATH=src python bench/llamacpp_batch.py --model smollm2-135m --n 9 --max-tokens 128
Prints one JSON object. The requests are GSM8K-style questions sampled at temperature 0.7 with distinct
seeds; ``identical`` reports whether batched and one-at-a-time outputs agree (they should: per-request
seeded sampling and batch-invariant logits, see deliberation/backends/llamacpp.py).
"""

from __future__ import annotations

import json
import time

from deliberation.backends.llamacpp import LlamaCppBackend
from deliberation.cli.common import Parser  # one-line errors, no abbreviated flags
from deliberation.types import Completion, GenerationRequest, Message

QUESTIONS = (
    "A baker makes 24 muffins and sells 3/4 of them. How many are left?",
    "Tom has 5 apples, buys 7 more and gives away 4. How many does he have?",
    "A train travels 60 km/h for 2.5 hours. How far does it go?",
    "What is 15% of 240?",
    "Sara reads 12 pages a day. How many days does a 300-page book take?",
    "A rectangle is 8 by 5. What is its perimeter?",
    "If 3 pencils cost 45 cents, what do 10 pencils cost?",
    "A class has 28 students; 4/7 are girls. How many boys are there?",
    "What is the sum of the first 10 positive integers?",
)


def requests(n: int, max_tokens: int) -> list[GenerationRequest]:
    return [
        GenerationRequest(
            messages=(Message("user", QUESTIONS[i % len(QUESTIONS)] + " Think step by step."),),
            max_tokens=max_tokens,
            temperature=0.7,
            seed=i,
        )
        for i in range(n)
    ]


def rate(completions: list[Completion], seconds: float) -> dict[str, float]:
    tokens = sum(c.completion_tokens for c in completions)
    per_s = round(tokens / seconds, 1)
    return {"seconds": round(seconds, 2), "completion_tokens": tokens, "tokens_per_s": per_s}


def main() -> None:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--n", type=int, default=9)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    backend = LlamaCppBackend(args.model, n_ctx=args.n_ctx, n_threads=args.threads, max_parallel=args.n)
    reqs = requests(args.n, args.max_tokens)
    backend.generate(reqs[:1])  # warm-up: page the weights in
    start = time.perf_counter()
    batched = backend.generate(reqs)
    batch_s = time.perf_counter() - start
    start = time.perf_counter()
    single = [backend.generate([r])[0] for r in reqs]
    single_s = time.perf_counter() - start
    backend.close()
    result = {
        "model": args.model,
        "n": args.n,
        "max_tokens": args.max_tokens,
        "prompt_tokens": sum(c.prompt_tokens for c in batched),
        "batched": rate(batched, batch_s),
        "one_at_a_time": rate(single, single_s),
        "speedup": round(single_s / batch_s * sum(c.completion_tokens for c in batched)
                         / max(1, sum(c.completion_tokens for c in single)), 2),
        "identical": [c.text for c in batched] == [c.text for c in single],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
