# The two commands of the README: `make demo` (the main job) and `make test`.
# Both create .venv and install what they need from pyproject.toml; nothing is installed by hand.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
DELIB := $(VENV)/bin/delib
# Portable llama.cpp build (DESIGN.md section 4): runs on any AVX2 machine, and is what CI tests. On a CPU
# with AVX-512 (VNNI), `make llama-native` rebuilds it for this CPU: 1.4x faster with qwen2.5-coder-0.5b here
# (docs/results/bench/README.md); outputs may differ in the last bits, as across any two builds.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
LLAMA_CPP = llama-cpp-python==$(shell sed -n 's/^llamacpp = \["llama-cpp-python==\(.*\)"\]/\1/p' pyproject.toml)
export HF_HUB_OFFLINE := 1
DATA ?= $(abspath ../shared/data)

.PHONY: demo test setup-test setup-demo llama-native clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(VENV)/.test-installed: pyproject.toml | $(VENV)/bin/python
	$(PIP) install -q -e ".[llamacpp,server,openai,hf,ray,plot,data,dev]"
	$(DELIB) models pull smollm2-135m
	touch $@

$(VENV)/.demo-installed: pyproject.toml | $(VENV)/bin/python
	$(PIP) install -q -e ".[llamacpp,plot]"
	$(DELIB) models pull qwen2.5-coder-1.5b
	touch $@

setup-test: $(VENV)/.test-installed
setup-demo: $(VENV)/.demo-installed

test: setup-test
	DELIB_DATA_DIR=$${DELIB_DATA_DIR:-$(DATA)} $(PY) -m pytest -q $(PYTEST_ARGS)

demo: setup-demo
	DELIB_DATA_DIR=$${DELIB_DATA_DIR:-$(DATA)} $(DELIB) experiment experiments/quick.toml
	cat runs/quick/report/report.md

llama-native: | $(VENV)/bin/python
	CMAKE_ARGS="-DGGML_NATIVE=ON" $(PIP) install -q --force-reinstall --no-deps --no-cache-dir "$(LLAMA_CPP)"

clean:
	rm -rf $(VENV) runs/quick
