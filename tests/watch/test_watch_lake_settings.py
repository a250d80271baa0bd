"""The gaming-day settings belong to the lake (issue 24, item 4), for the live service too: a
``pitwatch watch`` with another time zone or cutoff than the lake's stops with exit 2 and writes
nothing, and one with the lake's settings starts."""
from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from pitwatch.lake import Lake
from pitwatch.lake import settings as lake_settings
from pitwatch.schemas.decode import GamingDayConfig


def _tree(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _watch(tmp_path, lake, *args):
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(b"")
    return subprocess.run([sys.executable, "-m", "pitwatch.cli", "watch", str(feed), "--lake", str(lake),
                           "--stop-after-idle", "0.5", "--quiet", *args],
                          capture_output=True, text=True, timeout=120)


def test_watch_with_other_gaming_day_settings_than_the_lakes_is_exit_2(tmp_path):
    lake = tmp_path / "lake"
    lake_settings.record(Lake.at(lake), GamingDayConfig("06:00", "America/Puerto_Rico"), "r-1")
    before = _tree(lake)
    result = _watch(tmp_path, lake)          # watch's defaults: UTC, 06:00
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("Error: ") and "America/Puerto_Rico" in result.stderr
    assert "Traceback" not in result.stderr
    assert _tree(lake) == before


def test_watch_with_the_lakes_settings_starts(tmp_path):
    lake = tmp_path / "lake"
    lake_settings.record(Lake.at(lake), GamingDayConfig("06:00", "America/Puerto_Rico"), "r-1")
    result = _watch(tmp_path, lake, "--timezone", "America/Puerto_Rico")
    assert result.returncode == 0, result.stderr
