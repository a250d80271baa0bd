"""A partition written piece by piece holds exactly the rows, in the order, of one sorted write."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from pitwatch.lake import Lake
from pitwatch.lake import parquet as lake
from pitwatch.pipelines import coders
from pitwatch.schemas.arrow import events_to_table
from pitwatch.schemas.decode import GamingDayConfig, decode_line
from tests.conftest import line

PART = "part-0.parquet"   # the writer takes the name it is given (a run names it after its replay day)


def _events(table_id: str, seqs, device="SHOE-1"):
    cfg = GamingDayConfig()
    return events_to_table([decode_line(line(seq=s, table_id=table_id, device_id=device,
                                             event_id=f"{table_id}-{device}-{s}"), "f.jsonl", s, cfg)[0]
                            for s in seqs])


def test_pieces_of_one_table_each_are_written_in_sort_order(tmp_path):
    pieces = [_events("BAC-09", [3, 1, 2]), _events("BAC-01", [5, 4]), _events("BAC-05", [1], device="SHOE-0")]
    packed = [coders.pack(p) for p in pieces]
    rows = lake.write_partition_file(Lake.at(tmp_path / "a"), "events", "2026-11-28", packed, PART, unpack=coders.unpack).rows
    one = lake.write_partition_file(Lake.at(tmp_path / "b"), "events", "2026-11-28", [pa.concat_tables(pieces)], PART).rows
    a = pq.read_table(tmp_path / "a/events/gaming_day=2026-11-28/part-0.parquet")
    b = pq.read_table(tmp_path / "b/events/gaming_day=2026-11-28/part-0.parquet")
    assert rows == one == 6
    assert a.equals(b)
    assert a.column("event_id").to_pylist() == [
        "BAC-01-SHOE-1-4", "BAC-01-SHOE-1-5", "BAC-05-SHOE-0-1", "BAC-09-SHOE-1-1", "BAC-09-SHOE-1-2", "BAC-09-SHOE-1-3"]


def test_pieces_sharing_a_table_are_sorted_together(tmp_path):
    pieces = [_events("BAC-01", [3, 1]), _events("BAC-01", [2], device="SHOE-0")]
    lake.write_partition_file(Lake.at(tmp_path), "events", "2026-11-28", pieces, PART)
    t = pq.read_table(tmp_path / "events/gaming_day=2026-11-28/part-0.parquet")
    assert t.column("event_id").to_pylist() == ["BAC-01-SHOE-0-2", "BAC-01-SHOE-1-1", "BAC-01-SHOE-1-3"]


def test_pieces_sorted_where_they_were_replayed_are_written_as_they_come(tmp_path):
    pieces = [_events("BAC-09", [3, 1, 2]), _events("BAC-01", [5, 4]), _events("BAC-05", [1], device="SHOE-0")]
    marked = [coders.pack(lake.sorted_piece("events", p)) for p in pieces]
    assert [coders.peek(m)[lake.PIECE_FIRST_KEY] for m in marked] == [b"BAC-09", b"BAC-01", b"BAC-05"]
    unpacked = []

    def counting_unpack(item):
        unpacked.append(item)
        return coders.unpack(item)

    lake.write_partition_file(Lake.at(tmp_path / "a"), "events", "2026-11-28", marked, PART, unpack=counting_unpack, peek=coders.peek)
    lake.write_partition_file(Lake.at(tmp_path / "b"), "events", "2026-11-28", [coders.pack(p) for p in pieces], PART,
                         unpack=coders.unpack)
    part = "events/gaming_day=2026-11-28/part-0.parquet"
    assert (tmp_path / "a" / part).read_bytes() == (tmp_path / "b" / part).read_bytes()   # metadata not written
    assert len(unpacked) == 3                # each piece read once: its first key came from its metadata
    assert lake.PIECE_SORTED not in (pq.read_table(tmp_path / "a" / part).schema.metadata or {})


def test_a_piece_marked_sorted_is_not_sorted_again(tmp_path):
    # the mark is a promise the writer keeps: rows it says are sorted are written as they are
    rows = _events("BAC-01", [1, 2, 3])
    reversed_but_marked = rows.take([2, 1, 0]).replace_schema_metadata({lake.PIECE_SORTED: b"1"})
    lake.write_partition_file(Lake.at(tmp_path), "events", "2026-11-28", [reversed_but_marked, _events("BAC-02", [1])], PART)
    t = pq.read_table(tmp_path / "events/gaming_day=2026-11-28/part-0.parquet")
    assert t.column("seq").to_pylist() == [3, 2, 1, 1]


def test_a_piece_of_several_tables_has_no_first_key():
    both = pa.concat_tables([_events("BAC-01", [2, 1]), _events("BAC-02", [1])])
    piece = lake.sorted_piece("events", both)
    assert piece.schema.metadata == {lake.PIECE_SORTED: b"1"}
    assert piece.column("event_id").to_pylist() == ["BAC-01-SHOE-1-1", "BAC-01-SHOE-1-2", "BAC-02-SHOE-1-1"]


def test_a_single_marked_piece_is_written_as_it_comes_and_without_its_mark(tmp_path):
    # a day whose events all come from one table: one piece, written in one go
    rows = _events("BAC-01", [1, 2, 3])
    reversed_but_marked = rows.take([2, 1, 0]).replace_schema_metadata({lake.PIECE_SORTED: b"1"})
    lake.write_partition_file(Lake.at(tmp_path), "events", "2026-11-28", [coders.pack(reversed_but_marked)], PART,
                         unpack=coders.unpack, peek=coders.peek)
    t = pq.read_table(tmp_path / "events/gaming_day=2026-11-28/part-0.parquet")
    assert t.column("seq").to_pylist() == [3, 2, 1]
    assert lake.PIECE_SORTED not in (t.schema.metadata or {})


def _dictionary_encoded(path) -> dict[str, bool]:
    group = pq.ParquetFile(path).metadata.row_group(0)
    return {group.column(i).path_in_schema: "RLE_DICTIONARY" in group.column(i).encodings
            for i in range(group.num_columns)}


def test_columns_that_never_repeat_are_written_without_a_dictionary(tmp_path):
    piece = _events("BAC-01", range(1, 200))
    piece = piece.set_column(piece.schema.get_field_index("cards"), "cards",
                             pa.array([["AS", "KH"]] * 199, pa.list_(pa.string())))
    lake.write_partition_file(Lake.at(tmp_path), "events", "2026-11-28", [piece], PART)
    encoded = _dictionary_encoded(tmp_path / "events/gaming_day=2026-11-28/part-0.parquet")
    assert {name for name, is_dict in encoded.items() if not is_dict} >= lake.NOT_DICTIONARY_ENCODED
    assert not any(encoded[name] for name in lake.NOT_DICTIONARY_ENCODED)
    assert encoded["table_id"] and encoded["type"] and encoded["cards.list.element"]   # a list's leaf too
    assert pq.read_table(tmp_path / "events/gaming_day=2026-11-28/part-0.parquet").num_rows == 199


def test_a_list_of_structs_keeps_a_dictionary_on_each_leaf(tmp_path):
    table = pa.table({"run_id": ["r"], "inputs": pa.array(
        [[{"path": "a.jsonl", "sha256": "00", "bytes": 1}]],
        pa.list_(pa.struct([("path", pa.string()), ("sha256", pa.string()), ("bytes", pa.int64())])))})
    lake.write_atomically(Lake.at(tmp_path), "runs", "r.parquet", table)
    encoded = _dictionary_encoded(tmp_path / "runs/r.parquet")
    assert encoded["inputs.list.element.path"] and encoded["inputs.list.element.bytes"]
