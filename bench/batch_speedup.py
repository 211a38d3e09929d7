"""``llamacpp_batch_speedup`` of ``delib bench`` alone: the same measurement, without the rest of the bench.

Usage: PYTHONPATH=src python bench/batch_speedup.py --model smollm2-135m [--quick] [--no-extra-bufts]
Prints one JSON object (engine, raw and raw-fresh tokens/s and the two ratios).

Why a separate entry point: on a GPU host the whole bench may not run in one process. Seen on an H100 host
with llama-cpp-python 0.3.36 built for CUDA 13, two crashes (causes not established): with
llama.cpp's extra buffer types on (``use_extra_bufts``, the CPU repack/AMX weight layouts; the default) the
engine's backend crashed loading the model, GPU or not (a bare ``llama_model_load_from_file`` without
``llama_backend_init`` loaded); and torch (with its own CUDA 13 libraries) could not share the process in
either import order (an abort in ``free()``, or a silent exit). This script never imports torch, and
``--no-extra-bufts`` turns those buffer types off on both sides of the comparison (the engine's backend
and raw ``llama_cpp.Llama``; ``llamacpp_runtime.llama_loads_as_backend``), so the ratio stays like for
like. That host's CPU had AMX and its native build ggml's AMX kernels, which segfault on other AMX
machines too (llama.cpp issue 20824; the likely cause of the first crash); the backend and ``delib
bench``'s raw side now leave those buffers out on such a build by themselves
(``backends/llamacpp_runtime.model_params``), so the flag matters only for a build without AMX that still
crashes.
"""

from __future__ import annotations

import json
import os

from deliberation.cli.common import Parser  # one-line errors, no abbreviated flags


def main() -> None:
    parser = Parser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m", help="catalogue name or .gguf path")
    parser.add_argument("--quick", action="store_true", help="the --quick preset's sizes (else the full one's)")
    parser.add_argument("--no-extra-bufts", action="store_true", help="llama.cpp extra buffer types off, both sides")
    args = parser.parse_args()
    from deliberation.backends.llamacpp_runtime import import_llama_cpp, llama_loads_as_backend
    from deliberation.perf import bench_backend
    from deliberation.perf.measure import measure_llamacpp_batch
    from deliberation.perf.results import BenchSettings

    settings = BenchSettings.for_mode(args.quick, args.model)
    with llama_loads_as_backend(import_llama_cpp(), extra_bufts=not args.no_extra_bufts):
        with bench_backend(settings) as backend:
            result = measure_llamacpp_batch(settings, backend)
    print(json.dumps({"model": args.model, "quick": args.quick, "extra_bufts": not args.no_extra_bufts,
                      "threads": settings.threads, "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                      "engine_tok_s": result.engine.tokens_per_s, "raw_tok_s": result.raw.tokens_per_s,
                      "raw_fresh_tok_s": result.raw_fresh.tokens_per_s, "llamacpp_batch_speedup": result.speedup,
                      "speedup_vs_fresh": result.speedup_vs_fresh}))


if __name__ == "__main__":
    main()
