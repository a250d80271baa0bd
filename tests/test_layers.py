"""The house's layers (issue 38): every module imports only its own layer's modules and the layers
below it, the packages of one layer import none of each other, and nothing imports in a cycle (issue 25).

The layers, bottom up (``pitwatch/__init__.py`` draws them): base → contract → engine → inputs → lake
→ the batch, the live service, the queries and the simulator (side by side) → the command line.
Every ``import`` and ``from … import`` of pitwatch counts, at module level and inside functions alike
(a lazy import is still a dependency).  A module importing its own package's ``__init__`` is not an
edge (Python loads a package before its modules anyway).  Modules are named as installed: the folder
of each package is read from ``pyproject.toml``.
"""
from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]

#: bottom up; a package of layer n may import those of layers < n, and none of its own layer but itself
LAYERS = (
    ("pitwatch", "pitwatch.config", "pitwatch.wording"),                      # base
    ("pitwatch.schemas",),                                                     # contract
    ("pitwatch.rules", "pitwatch.seeds", "pitwatch.engine"),                   # engine
    ("pitwatch.inputs",),
    ("pitwatch.lake",),
    ("pitwatch.pipelines", "pitwatch.live", "pitwatch.queries", "pitwatch.simulator"),
    ("pitwatch.console",),                                                     # the console and the report
    ("pitwatch.cli",),
)
#: the engine is one layer of three packages that import each other one way: the driver runs the rules
#: with the seeds' reference data, and the seeds are read into the rules' reference type
WITHIN_LAYER = {("pitwatch.engine", "pitwatch.rules"), ("pitwatch.engine", "pitwatch.seeds"),
                ("pitwatch.seeds", "pitwatch.rules")}


def module_name(path: Path) -> str:
    for package, folder in FOLDERS.items():
        try:
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
        except ValueError:
            continue
        if len(parts) == 1 or package != "pitwatch":
            if parts[-1] == "__init__":
                parts.pop()
            return ".".join([package, *parts])
    raise AssertionError(f"{path} is in no package")


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for folder in FOLDERS.values() for p in (ROOT / folder).glob("*.py")}


def layer_of(module: str) -> tuple[int, str]:
    """(layer, package) of a module: the longest package of :data:`LAYERS` that holds it."""
    best = None
    for n, packages in enumerate(LAYERS):
        for package in packages:
            if (module == package or module.startswith(package + ".")) and (best is None or len(package) > len(best[1])):
                best = (n, package)
    assert best is not None, module
    return best


def _types_only(tree: ast.AST) -> set[ast.AST]:
    """The imports under ``if TYPE_CHECKING:``: they name types for annotations (the plug-in API's
    ``ctx: TableReplay``, a driver's ``devices: DeviceRegistry``) and never run, so they are no
    dependency of the module and no edge of the layers or the import graph."""
    return {n for node in ast.walk(tree)
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
            for stmt in node.body for n in ast.walk(stmt)}


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports (resolved to the longest existing module name)."""
    is_package = path.name == "__init__.py"
    found = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _types_only(tree)
    for node in ast.walk(tree):
        if node in skip:
            continue
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        for t in targets:
            while t and t not in modules:
                t = t.rpartition(".")[0]
            if t and t != name and not name.startswith(t + "."):
                found.add(t)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def wrong_way(graph: dict[str, set[str]]) -> list[str]:
    """Every import that runs up a layer, or across to another package of the same layer."""
    out = []
    for name, targets in sorted(graph.items()):
        n, package = layer_of(name)
        for t in sorted(targets):
            m, other = layer_of(t)
            if m > n or (m == n and other != package and (package, other) not in WITHIN_LAYER):
                out.append(f"{name} -> {t}")
    return out


def test_every_module_is_in_a_layer_of_the_installed_packages():
    modules = project_modules()
    assert {layer_of(m)[1] for m in modules} == {p for layer in LAYERS for p in layer}
    assert set(FOLDERS) == {p for layer in LAYERS for p in layer} - {"pitwatch.config", "pitwatch.wording"}


def test_every_import_runs_down_the_layers():
    modules = project_modules()
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    assert wrong_way(graph) == []


def test_an_import_up_or_across_is_found():
    # the check itself: the lake importing the batch runs up; the live service importing the batch runs across
    graph = {"pitwatch.lake.verify": {"pitwatch.pipelines.batch"}, "pitwatch.live.engine": {"pitwatch.pipelines.ingest"},
             "pitwatch.pipelines.batch": {"pitwatch.lake.runs", "pitwatch.engine.driver"}}
    assert wrong_way(graph) == ["pitwatch.lake.verify -> pitwatch.pipelines.batch",
                                "pitwatch.live.engine -> pitwatch.pipelines.ingest"]


def test_the_import_graph_has_no_cycle():
    modules = project_modules()
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    assert cycles(graph) == []


def test_a_cycle_is_found():
    # the check itself: two modules importing each other are one cycle
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_an_import_for_annotations_only_is_no_edge_but_one_that_runs_is(tmp_path):
    modules = {"pitwatch.rules.game": tmp_path / "game.py", "pitwatch.rules.table": tmp_path / "table.py"}
    typed = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pitwatch.rules.table import TableReplay\n"
             "def hook(ctx: TableReplay) -> None: ...\n")
    modules["pitwatch.rules.game"].write_text(typed)
    assert imports_of("pitwatch.rules.game", modules["pitwatch.rules.game"], modules) == set()
    modules["pitwatch.rules.game"].write_text(typed + "from pitwatch.rules.table import TableReplay as R\n")
    assert imports_of("pitwatch.rules.game", modules["pitwatch.rules.game"], modules) == {"pitwatch.rules.table"}
