"""Damaged files are accounted for: the lines before the damage are kept, the damage is one reject row.

Reader tests replay each kind of damage on real files; the last test is a
real ``pitwatch run`` process over a folder of them (exit 0, one ``rejects``
row per damaged file with its byte offset and no line, ``damaged_files`` and
``bytes_not_read`` in the summary and the ``runs`` record).
"""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
import zlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pitwatch.inputs.files import Damage, iter_jsonl_chunks, iter_line_chunks, iter_parquet_chunks
from pitwatch.schemas.limits import MAX_LINE_BYTES
from tests import lake_rows
from tests.conftest import event, line

LINES = [line(seq=i).encode() for i in range(1, 2001)]
TEXT = b"\n".join(LINES) + b"\n"


def read(path, chunk_lines=500) -> tuple[list[tuple[int, bytes]], Damage | None]:
    """Every (line number, line) the JSONL reader hands on, and its Damage."""
    lines, damage = [], None
    for items in iter_jsonl_chunks(str(path), chunk_lines, block_size=64 << 10):
        if isinstance(items, Damage):
            assert damage is None, "one Damage per file"
            damage = items
            continue
        assert damage is None, "the Damage comes last"
        lines.extend(items[i] for i in range(len(items)))
    reread = [item for _, chunk in iter_line_chunks(str(path), chunk_lines) for item in chunk]
    assert reread == lines, "the re-reading of lines (conflicts) sees the same lines"
    return lines, damage


def test_a_whole_gzip_is_read_without_damage(tmp_path):
    path = tmp_path / "ok.jsonl.gz"
    path.write_bytes(gzip.compress(TEXT[:50_000]) + gzip.compress(TEXT[50_000:]))     # two members
    lines, damage = read(path)
    assert damage is None and [l for _, l in lines] == LINES


def test_an_empty_gzip_file_holds_no_line_and_is_no_damage(tmp_path):
    path = tmp_path / "empty.jsonl.gz"
    path.write_bytes(b"")
    assert read(path) == ([], None)


def test_a_truncated_gzip_keeps_the_lines_before_and_says_it_is_truncated(tmp_path):
    data = gzip.compress(TEXT)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    lines, damage = read(path)
    assert damage == Damage(str(path), len(data) // 2, 0, "gzip data ends before its stream does: the file is truncated")
    assert 100 < len(lines) < len(LINES)
    assert [l for _, l in lines[:-1]] == LINES[: len(lines) - 1]       # every whole line before the cut
    assert LINES[len(lines) - 1].startswith(lines[-1][1])              # the cut line, as far as it goes


def test_corrupt_gzip_data_is_named_at_the_byte_zlib_refused(tmp_path):
    first = gzip.compress(b"".join(l + b"\n" for l in LINES[:1200]))
    second = bytearray(gzip.compress(b"".join(l + b"\n" for l in LINES[1200:])))
    second[2] = 7       # the second member's compression method: not deflate
    data = first + bytes(second)
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(data)
    lines, damage = read(path)
    assert [l for _, l in lines] == LINES[:1200]
    assert damage.what == "gzip data is corrupt (unknown compression method)"
    assert len(first) + 2 <= damage.offset < len(first) + 10      # where zlib sees it: in the member's header
    assert damage.bytes_not_read == len(data) - damage.offset


def test_corrupt_deflate_data_keeps_what_zlib_read_before_it(tmp_path):
    """Deflate may decode some corrupt bytes before it sees they are wrong: those come out as lines
    (rejected as such); the damage is named at the byte zlib refused."""
    data = bytearray(gzip.compress(TEXT, compresslevel=1))
    at = len(data) // 2
    data[at:at + 64] = bytes(range(64))
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(bytes(data))
    lines, damage = read(path)
    assert damage.what.startswith("gzip data is corrupt (") and damage.offset >= at
    assert damage.bytes_not_read == len(data) - damage.offset
    whole = [l for _, l in lines]
    assert whole[:100] == LINES[:100]
    d = zlib.decompressobj(31)      # the byte is exact: zlib takes what comes before it, and refuses it
    d.decompress(bytes(data[: damage.offset]))
    with pytest.raises(zlib.error):
        d.decompress(bytes(data[damage.offset: damage.offset + 1]))


def test_a_bad_checksum_at_the_end_of_a_gzip_is_damage(tmp_path):
    data = bytearray(gzip.compress(TEXT))
    data[-8] ^= 0xFF
    path = tmp_path / "crc.jsonl.gz"
    path.write_bytes(bytes(data))
    lines, damage = read(path)
    assert [l for _, l in lines] == LINES and damage.what == "gzip data is corrupt (incorrect data check)"


def test_a_plain_file_named_gz_is_not_gzip_data(tmp_path):
    path = tmp_path / "plain.jsonl.gz"
    path.write_bytes(TEXT)
    assert read(path) == ([], Damage(str(path), 0, len(TEXT), "it is not gzip data"))


def test_garbage_after_the_last_gzip_member_is_damage_after_it(tmp_path):
    data = gzip.compress(TEXT)
    path = tmp_path / "tail.jsonl.gz"
    path.write_bytes(data + b"garbage!")
    lines, damage = read(path)
    assert [l for _, l in lines] == LINES
    assert damage == Damage(str(path), len(data), 8, "what follows its last gzip member is not gzip data")


@pytest.mark.parametrize("content,what", [(gzip.compress(TEXT), "gzip data"), (b"PAR1" + b"\0" * 20, "a Parquet file"),
                                          (b"PK\x03\x04" + b"\0" * 20, "a zip archive")])
def test_a_jsonl_file_holding_another_format_is_not_read(tmp_path, content, what):
    path = tmp_path / "wrong.jsonl"
    path.write_bytes(content)
    assert read(path) == ([], Damage(str(path), 0, len(content), f"it holds {what}, not JSON Lines text"))


def test_a_line_longer_than_the_limit_is_handed_on_cut_and_the_next_line_is_whole(tmp_path):
    path = tmp_path / "long.jsonl"
    path.write_bytes(LINES[0] + b"\n" + b"{" + b"x" * (3 * MAX_LINE_BYTES) + b"\n" + LINES[1] + b"\n")
    lines, damage = read(path)
    assert damage is None and [n for n, _ in lines] == [1, 2, 3]
    assert lines[0][1] == LINES[0] and lines[2][1] == LINES[1]
    assert len(lines[1][1]) == MAX_LINE_BYTES + 1


def test_a_file_without_line_ends_is_read_in_bounded_memory(tmp_path):
    path = tmp_path / "blob.jsonl"
    path.write_bytes(b"x" * (8 * MAX_LINE_BYTES))
    lines, damage = read(path)
    assert damage is None and len(lines) == 1 and len(lines[0][1]) == MAX_LINE_BYTES + 1


def _parquet_rows(path):
    rows, damage = [], None
    for _, items in iter_parquet_chunks(str(path), 100):
        if isinstance(items, Damage):
            damage = items
        else:
            rows.extend(items)
    return rows, damage


def test_a_file_named_parquet_that_is_not_is_damage(tmp_path):
    path = tmp_path / "x.parquet"
    path.write_bytes(TEXT[:1000])
    rows, damage = _parquet_rows(path)
    assert rows == [] and damage.offset == 0 and damage.bytes_not_read == 1000
    assert damage.what.startswith("it is not a readable Parquet file (")


def bad_second_row_group(path, rows: list[dict]):
    """``rows`` written to ``path`` as Parquet, 100 rows a row group, the second one's first page header
    destroyed; the file's metadata, that row group's first byte and the file's bytes."""
    names = sorted({k for r in rows for k in r})
    pq.write_table(pa.Table.from_pylist([{k: r.get(k) for k in names} for r in rows]), path,
                   row_group_size=100, compression="snappy")
    meta = pq.ParquetFile(path).metadata
    second = meta.row_group(1).column(0)
    start = second.dictionary_page_offset if second.has_dictionary_page else second.data_page_offset
    data = bytearray(path.read_bytes())
    data[start:start + 40] = b"\xff" * 40       # the second row group's first page header
    path.write_bytes(bytes(data))
    return meta, start, bytes(data)


def test_a_parquet_row_group_that_cannot_be_read_keeps_the_row_groups_before(tmp_path):
    path = tmp_path / "groups.parquet"
    meta, start, _data = bad_second_row_group(path, [event(seq=i) for i in range(1, 301)])
    got, damage = _parquet_rows(path)
    assert [n for n, _ in got] == list(range(1, 101)) and got[0][1]["seq"] == 1
    assert damage.what.startswith("Parquet row group 2 of 3 cannot be read (") and damage.offset == start
    assert damage.bytes_not_read == sum(meta.row_group(g).column(c).total_compressed_size
                                        for g in (1, 2) for c in range(meta.num_columns))


@pytest.mark.slow
def test_a_run_over_damaged_files_completes_and_accounts_for_each(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    good = [line(seq=i, event_id=f"good-{i}").encode() for i in range(1, 51)]
    (folder / "good.jsonl").write_bytes(b"\n".join(good) + b"\n")
    cut = gzip.compress(b"\n".join(line(seq=i, device_id="SHOE-2", event_id=f"cut-{i}").encode()
                                   for i in range(1, 401)) + b"\n")
    (folder / "cut.jsonl.gz").write_bytes(cut[: len(cut) // 2])
    (folder / "plain.jsonl.gz").write_bytes(TEXT[:5000])
    (folder / "gz.jsonl").write_bytes(gzip.compress(TEXT[:5000]))
    (folder / "x.parquet").write_bytes(TEXT[:3000])
    lake = tmp_path / "lake"
    done = subprocess.run([sys.executable, "-m", "pitwatch.cli", "run", str(folder), "--lake", str(lake), "--quiet"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    damaged = {"cut.jsonl.gz", "plain.jsonl.gz", "gz.jsonl", "x.parquet"}
    for name in damaged:
        assert f"damaged     {folder / name}: damaged file: " in done.stdout
    rejects = lake_rows.dicts(lake, "rejects")
    damage_rows = [r for r in rejects if r["line"] is None]
    assert sorted(r["file"].rsplit("/", 1)[1] for r in damage_rows) == sorted(damaged)
    assert all(json.loads(r["raw"])["input_damaged"]["offset"] >= 0 and " at byte " in r["reason"] for r in damage_rows)
    run = lake_rows.last_run(lake)
    assert run["status"] == "succeeded" and run["damaged_files"] == 4
    assert run["bytes_not_read"] == 5000 + len(gzip.compress(TEXT[:5000])) + 3000       # the truncated one: 0
    assert sorted(d["path"].rsplit("/", 1)[1] for d in run["damage"]) == sorted(damaged)
    assert run["lines_read"] == run["accepted"] + run["rejected"] + run["duplicates"]
    assert run["rejected"] == len(rejects) - 4 <= 1          # the cut line of the truncated file, if any
    assert 50 + 100 < run["accepted"] < 50 + 400
    assert f"lines read  {run['lines_read']:,} = accepted {run['accepted']:,}" in done.stdout
    assert json.loads(run["options"])["not_after"] is None
    assert f"    rejects   {len(rejects):>10,} rows" in done.stdout
