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


def clean_floor_events(file: str = "floor.jsonl"):
    """The clean example's events as ingest decodes them (one Arrow table, six tables' rows),
    as if read from ``file``."""
    import pyarrow as pa

    from pitwatch.pipelines.ingest import DecodeChunk
    from pitwatch.schemas.decode import GamingDayConfig

    lines = [(i + 1, line) for i, line in enumerate(clean_floor_lines())]
    return pa.concat_tables([t for t in DecodeChunk(GamingDayConfig()).process((file, "jsonl", lines))
                             if isinstance(t, pa.Table)])
