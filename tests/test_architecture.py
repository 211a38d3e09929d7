"""The layout the code keeps (docs/design.md, section Architecture), checked on the package's imports.

Every ``import`` statement of every module counts, lazy ones inside functions and those under
``TYPE_CHECKING`` included: a cycle through a lazy import is still a cycle a reader has to untangle.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "deliberation"
TOP_LEVEL_MODULES = {"__init__", "actions", "types", "files", "errors", "registry", "config"}
FOUNDATION = {"deliberation", "deliberation.actions", "deliberation.types", "deliberation.files",
              "deliberation.errors", "deliberation.registry", "deliberation.config"}
LAYERS = ("backends", "benchmarks", "outputs", "engine", "policy", "allocate", "protocols", "methods", "trees", "rl",
          "runs", "report", "perf", "cli")
"""Bottom to top: a package imports the foundation and the packages before it, never one after it."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


REGISTERED = re.compile(r"^(deliberation(?:\.\w+)+):[\w.\[\]\"'-]+$")
"""A registry entry ``"module:attribute"`` (a ``Registry`` imports it lazily): an import like any other."""


def imports_of(path: Path, known: set[str], registered: bool = False) -> set[str]:
    """The deliberation modules ``path`` imports (``from pkg import mod`` resolves to ``pkg.mod``), and with
    ``registered`` its registry strings ``"deliberation.pkg.mod:NAME"`` too: for the layers, a
    string-registered dependency is still one (a package's registry naming its own modules is no cycle)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if registered and isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                REGISTERED.match(node.value):
            found.add(REGISTERED.match(node.value).group(1))
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "deliberation"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "deliberation":
            subs = {f"{node.module}.{a.name}" for a in node.names} & known
            found |= subs or {node.module}
    return found


def graph(registered: bool = False) -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(path, known, registered) & known - {name} for name, path in mods.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path of module names, or None (depth-first search with colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or module not in FOUNDATION and len(parts) == 2 else ""


def test_find_cycle_finds_a_hand_built_cycle_and_none_in_a_chain() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_imports_of_resolves_submodules_and_lazy_imports(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("from deliberation.engine import loop\ndef f():\n    import deliberation.types\n")
    known = {"deliberation.engine", "deliberation.engine.loop", "deliberation.types"}
    assert imports_of(source, known) == {"deliberation.engine.loop", "deliberation.types"}


def test_registry_strings_count_as_imports(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text('TABLE = {"a": "deliberation.engine.loop:run_episode", "b": "not a module: x"}\n')
    assert imports_of(source, {"deliberation.engine.loop"}, registered=True) == {"deliberation.engine.loop"}
    assert imports_of(source, {"deliberation.engine.loop"}) == set()


def test_the_package_has_no_import_cycle() -> None:
    assert find_cycle(graph()) is None


def test_no_subpackage_is_named_like_the_package() -> None:
    assert not (PACKAGE / "deliberation").exists()


def test_at_most_five_top_level_modules() -> None:
    loose = {p.stem for p in PACKAGE.glob("*.py")}
    assert loose <= TOP_LEVEL_MODULES, f"modules beside the packages: {sorted(loose - TOP_LEVEL_MODULES)}"


def test_rl_imports_neither_methods_nor_runs() -> None:
    bad = {(m, i) for m, deps in graph().items() if package_of(m) == "rl" for i in deps
           if package_of(i) in ("methods", "runs")}
    assert not bad, sorted(bad)


def test_every_package_is_a_layer() -> None:
    assert {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()} == set(LAYERS)


@pytest.mark.parametrize("package", LAYERS)
def test_packages_import_nothing_above_them(package: str) -> None:
    allowed = set(LAYERS[: LAYERS.index(package) + 1]) | {""}
    bad = {(m, i) for m, deps in graph(registered=True).items() if package_of(m) == package for i in deps
           if package_of(i) not in allowed}
    assert not bad, sorted(bad)
