"""The docs name what exists (issue 38: docs that drifted from the code after files moved).

Every relative link of the user's docs leads to a file of the repository (and to a heading of it,
when it names one); every repository path they write in backticks (``lake/delta.py``) exists; every
dotted name of the package they write (``pitwatch.lake.delta.commit_replays``) imports or is an attribute
of what imports.  ``bench/README.md`` is left out of the last two: it is a notebook of past
measurements and names what was there then.
"""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), ROOT / "queries" / "README.md",
                 ROOT / "seeds" / "README.md", ROOT / "tests" / "data" / "README.md"])
LINKED = [*GUIDES, ROOT / "bench" / "README.md"]
FOLDERS = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")}

LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
REPO_PATH = re.compile(r"[\w.-]+(?:/[\w.-]+)*/[\w.-]+\.(?:py|md|sh|csv|sql|json|gz|toml)")
DOTTED = re.compile(r"(?<![\w.])pitwatch(?:\.[A-Za-z_]\w*)+")


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _without_code_blocks(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings."""
    out = set()
    for line in _without_code_blocks(path.read_text(encoding="utf-8")).splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower().replace("`", "")
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def _text(path: Path, text: str | None) -> str:
    return path.read_text(encoding="utf-8") if text is None else text


def broken_links(path: Path, text: str | None = None) -> list[str]:
    """The relative links of ``path`` (or of ``text``, written at ``path``) that lead nowhere."""
    out = []
    for target in LINK.findall(_without_code_blocks(_text(path, text))):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            out.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            out.append(f"{target} (no such heading)")
    return out


def missing_paths(path: Path, text: str | None = None) -> list[str]:
    """Paths in backticks, starting with one of the repository's folders, that do not exist."""
    return [p for code in CODE.findall(_text(path, text)) for p in REPO_PATH.findall(code)
            if p.split("/")[0] in FOLDERS and not (ROOT / p).exists()]


def resolves(name: str) -> bool:
    """``name`` is a module of the package, or an attribute (or a dataclass's field) of one."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return attr in (getattr(obj, "__dataclass_fields__", None) or ())
            obj = getattr(obj, attr)
        return True
    return False


def metadata_keys() -> set[str]:
    """The keys pitwatch writes into Delta commit infos and Parquet metadata: named like modules, not modules."""
    from pitwatch.lake import delta, parquet, runs

    return {delta.RUN_ID_KEY, runs.WATCHER_KEY, runs.REGISTRY_KEY, parquet.PIECE_SORTED.decode(),
            parquet.PIECE_FIRST_KEY.decode()}


def unknown_names(path: Path, text: str | None = None) -> list[str]:
    names = {n for code in CODE.findall(_text(path, text)) for n in DOTTED.findall(code)} - metadata_keys()
    return [n for n in sorted(names) if not n.endswith((".toml", ".duckdb")) and not resolves(n)]


def test_every_relative_link_leads_somewhere():
    assert sum(len(LINK.findall(p.read_text(encoding="utf-8"))) for p in LINKED) > 50   # the scan sees the links
    assert {_rel(p): broken_links(p) for p in LINKED if broken_links(p)} == {}


def test_every_repository_path_the_docs_name_exists():
    assert {_rel(p): missing_paths(p) for p in GUIDES if missing_paths(p)} == {}


def test_every_dotted_name_of_the_package_the_docs_name_exists():
    assert {_rel(p): unknown_names(p) for p in GUIDES if unknown_names(p)} == {}


@pytest.mark.parametrize("text, found", [
    ("see [the lake](lake.md) and [pitwatch](https://example.org/x.md)", []),
    ("see [the lake](gone.md)", ["gone.md (no such file)"]),
    ("see [the lake](lake.md#no-such-heading)", ["lake.md#no-such-heading (no such heading)"]),
    ("see [a log](lake.md#a-log-that-ages-well), [the engine](../rules/table.py)", []),
])
def test_a_broken_link_is_found(text, found):
    assert broken_links(ROOT / "docs" / "page.md", text) == found


def test_a_missing_path_and_an_unknown_name_are_found():
    text = ("`pipelines/lake.py` and `lake/parquet.py`; `pitwatch.lake.delta.commit_replays`,"
            " `pitwatch.pipelines.cli.main`, `pitwatch.watcher` (a commit info's key)")
    assert missing_paths(ROOT / "docs" / "page.md", text) == ["pipelines/lake.py"]
    assert unknown_names(ROOT / "docs" / "page.md", text) == ["pitwatch.pipelines.cli.main"]
