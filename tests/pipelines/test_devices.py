"""The device registry (inputs/devices.py): read exactly, refused with the line when malformed,
and a malformed registry given to ``pitwatch run`` is exit 2 with the lake untouched."""
from __future__ import annotations

import datetime as _dt
import os
import subprocess
import sys

import pytest

from pitwatch.inputs.devices import INBOX_FILE, RegistryError, load_registry, registry_path, write_registry

HEADER = "device_id,source,table_id,from_day,to_day\n"


def _file(tmp_path, text, name="devices.csv"):
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(p)


def test_registry_rows_days_and_the_backroom_star(tmp_path):
    path = _file(tmp_path, "\ufeff" + HEADER + "DT-1,dealer,BAC-01,2026-11-01,\n\nSHF-9,shuffler,*,,\n"
                 "SHOE-1,shoe,BAC-01,2026-11-01,2026-11-30\nSHOE-2,shoe,BAC-02,,\n")
    reg = load_registry(path)
    assert reg.for_table("BAC-01") == (
        ("DT-1", "dealer", "BAC-01", _dt.date(2026, 11, 1), None),
        ("SHF-9", "shuffler", "*", None, None),
        ("SHOE-1", "shoe", "BAC-01", _dt.date(2026, 11, 1), _dt.date(2026, 11, 30)))
    assert [r[0] for r in reg.for_table("COM-01")] == ["SHF-9"]
    assert reg.describe()["rows"] == 4 and len(reg.sha256) == 64


def test_registry_columns_in_another_order(tmp_path):
    path = _file(tmp_path, "table_id,device_id,source,to_day,from_day\nBAC-01,DT-1,dealer,,2026-11-01\n")
    assert load_registry(path).rows == (("DT-1", "dealer", "BAC-01", _dt.date(2026, 11, 1), None),)


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("device_id,source,table\n", "the header must name the columns"),
    (HEADER + "DT-1,dealer,BAC-01,,,extra\n", "line 2: 6 values, expected 5"),
    (HEADER + "DT-1,dealer,BAC-01,,\nDT-2,terminal,BAC-01,,\n", "line 3: source 'terminal' is not one of"),
    (HEADER + ",dealer,BAC-01,,\n", "line 2: device_id is empty"),
    (HEADER + "DT-1,dealer,*,,\n", "line 2: table_id * (any table) is for a back-room shuffler only"),
    (HEADER + "SHOE-1,shoe,*,,\n", "line 2: table_id * (any table) is for a back-room shuffler only"),
    (HEADER + "DT-1,dealer,BAC-01,2026-13-01,\n", "line 2: from_day '2026-13-01' is not a gaming day"),
    (HEADER + "DT-1,dealer,BAC-01,20261101,\n", "line 2: from_day '20261101' is not a gaming day"),
    (HEADER + "DT-1,dealer,BAC-01,2026-11-30,2026-11-01\n", "line 2: to_day 2026-11-01 is before from_day"),
    (HEADER + 'DT-1,dealer,"BAC-01,,\n', "not valid CSV"),
    (HEADER.encode() + b"DT-1,dealer,BAC-\xff01,,\n", "line 2: not UTF-8 text"),
    (HEADER + "DT-1,dealer,BAC\x0001,,\n", "NUL bytes"),
])
def test_a_malformed_registry_names_the_line(tmp_path, text, message):
    path = _file(tmp_path, text)
    with pytest.raises(RegistryError) as caught:
        load_registry(path)
    assert str(caught.value).startswith(f"device registry {path}") and message in str(caught.value)


def test_a_registry_that_is_missing_or_a_folder(tmp_path):
    with pytest.raises(RegistryError, match="no such file"):
        load_registry(str(tmp_path / "nope.csv"))
    with pytest.raises(RegistryError, match="is a folder"):
        load_registry(str(tmp_path))


def test_the_one_place_that_chooses_the_registry(tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    assert registry_path(None, None) is None and registry_path(None, str(inbox)) is None
    (inbox / INBOX_FILE).write_text(HEADER)
    assert registry_path(None, str(inbox)) == os.path.join(str(inbox), INBOX_FILE)
    assert registry_path("given.csv", str(inbox)) == "given.csv"          # --devices wins


def test_write_registry_reads_back(tmp_path):
    rows = [("DT-1", "dealer", "BAC-01", _dt.date(2026, 11, 28), None), ("SHF-1", "shuffler", "*", None, None)]
    write_registry(tmp_path / "d.csv", rows)
    assert list(load_registry(str(tmp_path / "d.csv")).rows) == rows


def _lake_bytes(lake):
    out = {}
    for root, _dirs, names in os.walk(lake):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, lake)] = f.read()
    return out


@pytest.mark.parametrize("nightly", [False, True])
def test_run_with_a_malformed_registry_is_exit_2_naming_the_line_and_the_lake_is_untouched(tmp_path, nightly):
    bad = _file(tmp_path, HEADER + "DT-1,dealer,BAC-01,,\nSHOE-1,shoe,*,,\n")
    feeds = tmp_path / "inbox" / "2026-11-28"
    feeds.mkdir(parents=True)
    (feeds / "a.jsonl").write_text("")
    lake = tmp_path / "lake"
    lake.mkdir()
    (lake / "keep.txt").write_text("the lake before")
    before = _lake_bytes(lake)
    if nightly:    # the nightly form reads INBOX/devices.csv
        (tmp_path / "inbox" / INBOX_FILE).write_bytes(open(bad, "rb").read())
        args = ["--day", "2026-11-28", "--inbox", str(tmp_path / "inbox")]
    else:
        args = [str(feeds), "--devices", bad]
    r = subprocess.run([sys.executable, "-m", "pitwatch.cli", "run", *args, "--lake", str(lake), "--quiet"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("Error: device registry ") and "line 3" in r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1
    assert _lake_bytes(lake) == before
