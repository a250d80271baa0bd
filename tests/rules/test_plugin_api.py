"""The plug-in API is the only way into the engine, and no module reaches into another's privates.

Game plug-ins (pitwatch.rules.game), the engine's streams (pitwatch.rules.dealer,
pitwatch.rules.machines), the table checks and the live service act on a table's
replay through :class:`pitwatch.rules.table.TableReplay`'s public methods and read
its records (pitwatch.rules.state); an attribute whose name starts with ``_`` is
private to the module that defines it, in every package.  This test reads every
module of pitwatch and fails on ``x._name`` where ``x`` is not ``self``/``cls`` and
``_name`` is not defined in that module (``rp._fver += 1``, ``rp._pack(...)``,
``driver.replay._out`` ...).  The named-tuple API (``ev._replace``) and ``os._exit`` are public.
"""
from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("pitwatch", "schemas", "rules", "engine", "inputs", "seeds", "lake", "queries", "pipelines", "live",
            "simulator", "cli")
NAMED_TUPLE_API = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}
DOCUMENTED = {("os", "_exit")}     # the standard library's documented underscore names


def _defined(tree: ast.AST) -> set[str]:
    """Private names the module itself defines: functions, classes, module names, and attributes it
    sets on ``self``/``cls`` (a store on another object is a reach, not a definition)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            out.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
    return out


def reaches(source: str) -> list[str]:
    """``x._name`` accesses of ``source`` into another module's privates, as ``line: text``."""
    tree = ast.parse(source)
    own = _defined(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or name.startswith("__") or name in NAMED_TUPLE_API:
            continue
        if isinstance(node.value, ast.Name) and (node.value.id in ("self", "cls") or (node.value.id, name) in DOCUMENTED):
            continue
        if name in own:
            continue
        out.append(f"{node.lineno}: {ast.unparse(node)}")
    return out


def _modules():
    for package in PACKAGES:
        yield from sorted((ROOT / package).glob("*.py"))


@pytest.mark.parametrize("path", list(_modules()), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_module_reaches_into_anothers_privates(path):
    assert reaches(path.read_text(encoding="utf-8")) == []


def test_the_check_finds_the_reaches_the_typed_state_issue_named():
    source = "def card(rp, ev):\n    rp._fver += 1\n    pack = rp._pack(ev.pack_id, ev)\n    rp._settle(pack)\n"
    assert reaches(source) == ["2: rp._fver", "3: rp._pack", "4: rp._settle"]


def test_the_check_allows_a_class_its_own_privates_and_the_named_tuple_api():
    source = ("class Replay:\n    def __init__(self):\n        self._out = []\n"
              "    @classmethod\n    def load(cls):\n        obj = cls()\n        obj._out.append(1)\n        return obj\n"
              "def move(ev):\n    return ev._replace(pack_id='P-2')\n")
    assert reaches(source) == []
