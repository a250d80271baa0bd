"""Issue 23 rerun as written: each case a clean file plus one line, through a real ``pitwatch run`` process.

Every case crashed the whole run (or went wrong silently) on the main of
that day; now each must be one reject with its reason, in a completed run
(exit 0) whose accounting adds up, and no partition of year 9999.
"""
from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests import lake_rows
from tests.conftest import event, line

CASES = {   # file name → (the bad line, the start of its reason)
    "type_object": (json.dumps(event(seq=9, type={"a": 1})).encode(), "field 'type' must be a string, got an object"),
    "type_array": (json.dumps(event(seq=9, type=["card_drawn"])).encode(), "field 'type' must be a string, got a list"),
    "seq_2_63": (json.dumps(event(seq=2**63)).encode(), "field 'seq' must be less than 2^63"),
    "seq_2_64": (json.dumps(event(seq=2**64 - 1)).encode(), "field 'seq' must be less than 2^63"),
    "seat_1e300": (json.dumps(event("bet_placed", seq=9)).replace('"seat": 3', '"seat": 1e300').encode(),
                   "field 'seat' must be less than 2^63, got 1e+300"),
    "ts_year_1": (json.dumps(event(seq=9, ts="0001-01-01T00:00:00Z")).encode(), "field 'ts' is before 1970"),
    "ts_9999_offset": (json.dumps(event(seq=9, ts="9999-12-31T23:59:59-23:59")).encode(), "field 'ts' is in year 9999"),
    "ts_9999_z": (json.dumps(event(seq=9, ts="9999-12-31T00:00:00Z")).encode(), "field 'ts' is in year 9999"),
    "utf8": (json.dumps(event(seq=9, pack_id="P-@@")).encode().replace(b"@@", b"\xff\xfe"), "not valid UTF-8"),
    "deep": (json.dumps(event(seq=9)).encode()[:-1] + b', "x": ' + b"[" * 10_000 + b"]" * 10_000 + b"}",
             "nested deeper than 64 levels"),
}


@pytest.mark.slow
def test_each_case_of_the_issue_is_a_reject_in_a_completed_run(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for k, (bad, _) in enumerate(CASES.values()):
        name = list(CASES)[k]
        clean = [line(seq=s, device_id=f"SHOE-{k}", event_id=f"{name}-{s}").encode() for s in range(1, 4)]
        (folder / f"{name}.jsonl").write_bytes(b"\n".join(clean + [bad]) + b"\n")
    gz = [line(seq=s, device_id="SHOE-gz", event_id=f"gz-{s}").encode() for s in range(1, 4)]
    with gzip.open(folder / "gz.jsonl.gz", "wb") as f:
        f.write(b"\n".join(gz) + b"\n")
    rows = [event("bet_placed", seq=s, device_id="DT-pq", event_id=f"pq-{s}", amount=100.0) for s in range(1, 4)]
    rows.append(event("bet_placed", seq=4, device_id="DT-pq", event_id="pq-4", amount=float("nan")))
    pq.write_table(pa.Table.from_pylist(rows), folder / "nan_amount.parquet")
    struct = pa.Table.from_pylist([{**event(seq=1, device_id="SHOE-st", event_id="st-1"), "type": {"a": 1}}])
    pq.write_table(struct, folder / "type_struct.parquet")
    lake = tmp_path / "lake"
    done = subprocess.run([sys.executable, "-m", "pitwatch.cli", "run", str(folder), "--lake", str(lake), "--quiet"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "Error" not in done.stdout
    rejects = {r["file"].rsplit("/", 1)[1]: r for r in lake_rows.dicts(lake, "rejects")}
    for name, (_, reason) in CASES.items():
        assert rejects[f"{name}.jsonl"]["reason"].startswith(reason), (name, rejects[f"{name}.jsonl"]["reason"])
        assert rejects[f"{name}.jsonl"]["line"] == 4
    assert rejects["nan_amount.parquet"]["reason"] == "field 'amount' must be a finite number, got nan"
    assert rejects["type_struct.parquet"]["reason"] == "field 'type' must be a string, got an object"
    assert len(rejects) == len(CASES) + 2
    run = lake_rows.last_run(lake)
    assert run["status"] == "succeeded"
    assert run["lines_read"] == 4 * len(CASES) + 3 + 4 + 1
    assert (run["accepted"], run["rejected"], run["duplicates"]) == (3 * len(CASES) + 3 + 3, len(CASES) + 2, 0)
    assert sorted(p.name for p in (lake / "events").iterdir()) == ["_delta_log", "gaming_day=2026-11-28"]
