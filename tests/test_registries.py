"""The one registry idiom (registry.py): a read-only table of entries, lazy ones imported once on first access,
and every registry of the package an instance of it."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

import deliberation
from deliberation.errors import DelibError
from deliberation.registry import Registry, imported

WIDGETS = '''
READS = []


class Widget:
    pass


def __getattr__(name):  # counts every resolution of a lazy entry (PEP 562)
    READS.append(name)
    if name == "WIDGET":
        return Widget()
    if name == "TABLE":
        return {"big": "a big widget"}
    raise AttributeError(name)
'''
KINDS = {"advantage", "algorithm", "allocator feature", "answer type", "backend", "benchmark", "feature set",
         "fixed rule", "method", "objective", "prompt set", "reward", "reward components", "rule twin", "signal",
         "transferred workflow"}
"""Every kind of component the package registers (docs/design.md, section Registries)."""


@pytest.fixture
def widgets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Registry:
    """A registry of one eager and two lazy entries, the lazy ones in a module not yet imported."""
    (tmp_path / "lazy_widgets.py").write_text(WIDGETS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_widgets", raising=False)
    return Registry("widget", {"plain": 7, "lazy": "lazy_widgets:WIDGET", "keyed": "lazy_widgets:TABLE[big]"})


def test_listing_counting_and_membership_import_nothing(widgets: Registry) -> None:
    assert list(widgets) == ["plain", "lazy", "keyed"] and list(widgets.keys()) == list(widgets)
    assert len(widgets) == 3 and "lazy" in widgets and "other" not in widgets
    assert "lazy_widgets" not in sys.modules


def test_a_lazy_entry_is_imported_on_first_access_and_resolved_once(widgets: Registry) -> None:
    first = widgets["lazy"]
    assert type(first).__name__ == "Widget" and widgets["lazy"] is first and widgets.resolve("lazy") is first
    assert widgets["keyed"] == "a big widget" and widgets["plain"] == 7
    assert sys.modules["lazy_widgets"].READS == ["WIDGET", "TABLE"]


def test_an_unknown_name_is_one_line_listing_the_valid_ones(widgets: Registry) -> None:
    with pytest.raises(DelibError) as err:
        widgets.resolve("gadget")
    assert str(err.value) == "unknown widget 'gadget'; choose one of: plain, lazy, keyed"


def test_it_is_a_read_only_mapping(widgets: Registry) -> None:
    assert isinstance(widgets, Mapping)
    assert widgets.get("gadget") is None and widgets.get("gadget", 0) == 0 and widgets.get("plain") == 7
    with pytest.raises(KeyError):
        widgets["gadget"]
    with pytest.raises(TypeError):
        widgets["gadget"] = 1  # type: ignore[index]
    assert dict(widgets)["keyed"] == "a big widget" and "lazy_widgets:WIDGET" not in widgets.values()


def test_a_malformed_reference_is_refused_when_declared() -> None:
    with pytest.raises(ValueError, match="no 'module:attribute' reference"):
        Registry("widget", {"bad": "lazy_widgets.WIDGET"})
    with pytest.raises(ValueError, match="no 'module:attribute' reference"):
        imported("no reference")


def test_a_derived_table_is_read_again_at_every_use() -> None:
    source = {"a": 1}
    derived = Registry("widget", lambda: {name: value * 10 for name, value in source.items()})
    assert dict(derived) == {"a": 10}
    source["b"] = 2
    assert list(derived) == ["a", "b"] and derived.resolve("b") == 20


def declared_in(path: Path) -> list[str]:
    """The module-level names ``path`` assigns a ``Registry(...)`` call to."""
    tree = ast.parse(path.read_text())
    assigned = [(n.targets if isinstance(n, ast.Assign) else [n.target], n.value) for n in tree.body
                if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None]
    return [t.id for targets, value in assigned for t in targets if isinstance(t, ast.Name)
            and isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "Registry"]


def package_registries() -> dict[str, Registry]:
    """Every Registry the package's modules hold at module level, under the name of the module declaring it."""
    held: dict[int, Registry] = {}
    declared: dict[int, str] = {}
    for info in pkgutil.walk_packages(deliberation.__path__, "deliberation."):
        module = importlib.import_module(info.name)
        held |= {id(v): v for v in vars(module).values() if isinstance(v, Registry)}
        declared |= {id(getattr(module, name)): f"{info.name}.{name}" for name in declared_in(Path(module.__file__))}
    assert set(held) <= set(declared), [r.kind for i, r in held.items() if i not in declared]
    return {declared[i]: r for i, r in held.items()}


def test_every_kind_of_component_is_a_registry() -> None:
    kinds = {registry.kind for registry in package_registries().values()}
    assert KINDS <= kinds, sorted(KINDS - kinds)


LIST_EVERY_LAZY_REGISTRY = """
import importlib, json, sys
from deliberation.registry import Registry
holders = [importlib.import_module(m) for m in sys.argv[1:]]
registries = list({id(v): v for m in holders for v in vars(m).values()
                   if isinstance(v, Registry) and not callable(v.table)}.values())
before = set(sys.modules)
names = [(list(r), len(r), sorted(r.keys()), [n in r for n in r]) for r in registries]
print(json.dumps({"registries": len(registries), "imported": sorted(set(sys.modules) - before)}))
"""


def test_listing_the_package_registries_imports_nothing() -> None:
    """In a fresh interpreter, naming every entry of every declared table loads none of its lazy entries."""
    declared = {name: r for name, r in package_registries().items() if not callable(r.table)}
    holders = sorted({name.rpartition(".")[0] for name in declared})
    done = subprocess.run([sys.executable, "-c", LIST_EVERY_LAZY_REGISTRY, *holders], capture_output=True, text=True,
                          check=True)
    found = json.loads(done.stdout)
    assert found["registries"] == len(declared) and found["imported"] == []
