"""ggml's AMX kernels segfault on quantized models on some AMX CPUs (llama.cpp issue 20824): a llama.cpp build
that has them loads models without the extra weight buffers that route matrix products to them."""

from __future__ import annotations

import llama_cpp
import pytest

from deliberation.backends.llamacpp_runtime import AMX_BUILT, model_params


class Reporting:
    """The real llama_cpp module, but for the instruction sets its build reports."""

    def __init__(self, info: str) -> None:
        self.info = info

    def llama_print_system_info(self) -> bytes:
        return self.info.encode()

    def __getattr__(self, name: str):
        return getattr(llama_cpp, name)


@pytest.mark.parametrize("amx", [True, False])
def test_a_build_with_amx_kernels_loads_models_without_extra_weight_buffers(amx: bool) -> None:
    info = "CPU : AVX2 = 1 | AVX512 = 1 | " + (f"{AMX_BUILT} | " if amx else "") + "REPACK = 1 | "
    params = model_params(Reporting(info))
    assert params.use_extra_bufts is (not amx)
    assert params.load_mode == llama_cpp.llama_model_default_params().load_mode  # the rest: llama.cpp's defaults


def test_the_marker_is_what_an_amx_build_reports() -> None:
    """The string is llama.cpp's own: ggml-cpu's feature list names AMX_INT8 so (llama_print_system_info)."""
    assert AMX_BUILT == "AMX_INT8 = 1"
    assert "AVX2 = 1" in llama_cpp.llama_print_system_info().decode()  # the same "NAME = 1" form, in this build
