"""The replay engine: every dealing procedure as pure, incremental Python (no Beam, no I/O).

Installed normally, the modules are also compiled with Cython (``setup.py``);
the ``.py`` files stay the source of truth.  Importing this package checks
that the compiled modules were built from the sources beside them (the
digests in ``_compiled_from.json``).  When they were not (a rule edited after
the build) or ``PITWATCH_PURE=1`` is set, every ``rules`` module is loaded
from its ``.py`` instead: a stale build costs speed, never correctness.
``make test`` and ``make demo`` rebuild what changed first.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings

_HERE = os.path.dirname(os.path.abspath(__file__))
_MANIFEST = os.path.join(_HERE, "_compiled_from.json")


def compiled_modules() -> list[str]:
    """Names of the ``rules`` modules that have a compiled form beside their source."""
    names = []
    for entry in sorted(os.listdir(_HERE)):
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            if entry.endswith(suffix) and os.path.isfile(os.path.join(_HERE, entry[:-len(suffix)] + ".py")):
                names.append(f"{__name__}.{entry[:-len(suffix)]}")
    return names


def pure_requested() -> bool:
    """``PITWATCH_PURE`` set to anything but empty or ``0``: run every module from its source."""
    return os.environ.get("PITWATCH_PURE", "") not in ("", "0")


def stale_modules(compiled: list[str] | None = None) -> list[str]:
    """Compiled modules whose source differs from what they were built from (all of them if unknown)."""
    compiled = compiled_modules() if compiled is None else compiled
    try:
        with open(_MANIFEST, encoding="utf-8") as f:
            built_from = json.load(f)
    except (OSError, ValueError):
        return compiled
    stale = []
    for name in compiled:
        with open(os.path.join(_HERE, name.rpartition(".")[2] + ".py"), "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() != built_from.get(name):
                stale.append(name)
    return stale


class _FromSource:
    """Meta-path finder: ``rules.<module>`` from its ``.py``, never from a compiled file."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.startswith(__name__ + "."):
            source = os.path.join(_HERE, name.rpartition(".")[2] + ".py")
            if os.path.isfile(source):
                return importlib.util.spec_from_file_location(name, source)
        return None


def _choose_source_or_compiled() -> None:
    compiled = compiled_modules()
    if not compiled:
        return
    if not pure_requested():
        stale = stale_modules(compiled)
        if not stale:
            return
        warnings.warn(f"pitwatch: {', '.join(stale)} changed since the rules were compiled; running every "
                      f"rules module from its source (slower); `make install` (or `python setup.py build_ext "
                      f"--inplace`) compiles them again.", RuntimeWarning, stacklevel=2)
    sys.meta_path.insert(0, _FromSource())


_choose_source_or_compiled()
