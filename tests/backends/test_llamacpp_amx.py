"""ggml's AMX kernels segfault on quantized models on some AMX CPUs (llama.cpp issue 20824): a llama.cpp build
that has them loads models without the extra weight buffers that route matrix products to them."""

from __future__ import annotations

import re

import llama_cpp
import pytest

from deliberation.backends.llamacpp_runtime import AMX_BUILT, llama_loads_as_backend, model_params


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


def test_the_marker_has_the_form_this_build_reports_its_instruction_sets_in() -> None:
    """llama_print_system_info lists "NAME = 1 | " per compiled feature; AMX_BUILT is ggml's AMX_INT8 so."""
    info = llama_cpp.llama_print_system_info().decode()
    assert re.search(r"\b[A-Z0-9_]+ = 1 \| ", info) and re.fullmatch(r"[A-Z0-9_]+ = 1", AMX_BUILT)


@pytest.mark.parametrize("amx", [True, False])
def test_plain_llama_loads_with_the_backends_parameters_while_asked(amx: bool) -> None:
    """The bench's raw ``llama_cpp.Llama`` reads the low-level defaults itself: inside the context they are
    ``model_params``'s (so no AMX buffers on an AMX build), and llama.cpp's own again after it."""
    lib = Reporting(f"CPU : AVX2 = 1 | {AMX_BUILT if amx else 'AVX512 = 1'} | ")
    with llama_loads_as_backend(lib):
        assert llama_cpp.llama_cpp.llama_model_default_params().use_extra_bufts is (not amx)
    assert llama_cpp.llama_cpp.llama_model_default_params().use_extra_bufts is True


def test_asked_to_leave_extra_buffers_out_both_sides_load_without_them_until_closed() -> None:
    """``extra_bufts=False`` (batch_speedup.py --no-extra-bufts): the backend's ``model_params`` and the
    low-level defaults raw ``Llama`` reads both leave them out, nested opens (the raw side's own) included,
    and every default is llama.cpp's own after the outer one closes."""
    lib = Reporting("CPU : AVX2 = 1 | AVX512 = 1 | ")
    with llama_loads_as_backend(llama_cpp, extra_bufts=False):
        with llama_loads_as_backend(llama_cpp):
            assert llama_cpp.llama_cpp.llama_model_default_params().use_extra_bufts is False
        assert model_params(lib).use_extra_bufts is False
        assert llama_cpp.llama_cpp.llama_model_default_params().use_extra_bufts is False
        assert model_params(lib).n_gpu_layers == -1  # the rest: llama.cpp's defaults
    assert model_params(lib).use_extra_bufts is True
    assert llama_cpp.llama_model_default_params().use_extra_bufts is True
    assert llama_cpp.llama_cpp.llama_model_default_params().use_extra_bufts is True


def test_an_error_inside_restores_llama_cpps_defaults() -> None:
    """A load that raises inside the context (a missing file, say) leaves llama.cpp's defaults as they were."""
    with pytest.raises(RuntimeError, match="load failed"):
        with llama_loads_as_backend(llama_cpp, extra_bufts=False):
            raise RuntimeError("load failed")
    assert llama_cpp.llama_model_default_params().use_extra_bufts is True
    assert llama_cpp.llama_cpp.llama_model_default_params().use_extra_bufts is True
