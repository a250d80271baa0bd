"""Paths of the test data shipped with the repo (see README.md here)."""
import gzip
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
CLEAN_FLOOR = HERE / "clean-floor-2h.jsonl.gz"
RULES_MD = HERE / "rules.md"


def clean_floor_lines() -> list[bytes]:
    """The clean example's lines, without line ends."""
    with gzip.open(CLEAN_FLOOR, "rb") as f:
        return f.read().splitlines()
