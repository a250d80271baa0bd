"""pitwatch runs on Beam's public API: no file of the project starts Beam's workers itself, rewrites
their command or reads progress out of Beam's logs (issue 25: the zygote, the worker shim, the
runner subclass and the log parsing are gone; progress comes from pitwatch's own steps,
pitwatch.pipelines.progress)."""
from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
SKIP = {".venv", ".git", "build", "dist", "__pycache__", ".pytest_cache", ".hypothesis"}
TEXT = {".py", ".pyx", ".md", ".toml", ".cfg", ".txt", ".sh", ".sql", ".yaml", ".yml", ".json", ""}

# Written in two parts, so that this file does not find itself
FORBIDDEN = {
    "sdk_worker" + "_main": "Beam's worker main, started or imported by hand",
    "SUBPROCESS" + "_SDK": "the worker command of Beam's environments, rewritten",
    "local_job" + '_service"': "the logger that relays the workers' log entries (parsed for progress)",
    "import local_job" + "_service": "Beam's job service, patched",
    "log_" + "location": "a field of Beam's relayed log entries",
    "Running bundle" + " for stage": "the embedded runner's DEBUG line for each stage",
    'getLogger("apache' + "_beam": "a handler on one of Beam's loggers",
    "getLogger('apache" + "_beam": "a handler on one of Beam's loggers",
}


def project_files(root: pathlib.Path) -> list[pathlib.Path]:
    out = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if any(part in SKIP or part.endswith(".egg-info") for part in rel.parts) or not path.is_file():
            continue
        if path.suffix in TEXT or path.name == "Makefile":
            out.append(path)
    return out


def forbidden_uses(root: pathlib.Path) -> list[str]:
    found = []
    for path in project_files(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        for needle, what in FORBIDDEN.items():
            if needle in text:
                found.append(f"{path.relative_to(root)}: {needle!r} ({what})")
    return found


def test_no_file_of_the_project_uses_beams_worker_internals_or_parses_its_logs():
    files = project_files(ROOT)
    assert ROOT / "pipelines" / "batch.py" in files and ROOT / "bench" / "batch.py" in files   # the walk works
    assert forbidden_uses(ROOT) == []


def test_the_check_finds_what_it_looks_for(tmp_path):
    """Not blind: a project file naming Beam's worker main is reported, Beam's own copy is not."""
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "batch.py").write_text("from apache_beam.runners.worker import " + "sdk_worker" + "_main\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "beam.py").write_text("sdk_worker" + "_main")
    needle = "sdk_worker" + "_main"
    assert forbidden_uses(tmp_path) == [f"pipelines/batch.py: {needle!r} ({FORBIDDEN[needle]})"]
