"""Reading JSONL in blocks of whole lines (pipelines.inputs) and decoding a block whole.

A block with nothing to skip or strip is decoded as read; any other goes line
by line.  Both must give the same events, rejects, counts and line numbers.
"""
from __future__ import annotations

import gzip

import pytest

from pipelines.coders import unpack
from pipelines.ingest import TAG_COUNTS, TAG_REJECTS, DecodeChunk
from pipelines.inputs import block_lines, clean_block_lines, iter_line_blocks, iter_line_chunks
from schemas.decode import GamingDayConfig
from tests.pipelines.test_ingest_transforms import line


@pytest.mark.parametrize("ending", [b"\n", b""])
@pytest.mark.parametrize("read_size", [7, 64, 1 << 20])
def test_blocks_cover_the_file_in_whole_lines(tmp_path, ending, read_size):
    text = b"\n".join(b"line %d" % i + b"x" * (i % 13) for i in range(1, 48)) + ending
    path = tmp_path / "f.jsonl"
    path.write_bytes(text)
    blocks = list(iter_line_blocks(str(path), 10, read_size=read_size))
    assert b"".join(b for _, b in blocks) == text
    assert [first for first, _ in blocks] == [1, 11, 21, 31, 41]
    assert all(b.endswith(b"\n") and b.count(b"\n") == 10 for _, b in blocks[:-1])
    numbered = [n for first, b in blocks for n, _ in block_lines(first, b)]
    assert numbered == list(range(1, 48))


def test_gzip_blocks_and_the_line_chunks_built_on_them(tmp_path):
    path = tmp_path / "f.jsonl.gz"
    path.write_bytes(gzip.compress(b"\xef\xbb\xbfa\r\n\n  \nb\nc"))
    # chunks of two physical lines: [a, ""], ["  ", b], [c]
    assert [items for _, items in iter_line_chunks(str(path), 2)] == [[(1, b"a")], [(4, b"b")], [(5, b"c")]]


@pytest.mark.parametrize("block, first", [
    (b'{"a":1}\n\n{"a":2}\n', 1),      # an empty line
    (b'{"a":1}\n  \n', 1),             # a line of spaces
    (b'{"a":1}\r\n', 1),               # CRLF
    (b'\xef\xbb\xbf{"a":1}\n', 1),     # a byte-order mark on line 1
    (b'{"a":1}\n\n', 5),               # ends in an empty line
    (b'\t{"a":1}\n', 5),               # starts with white space
    (b'\n', 3),
])
def test_a_block_with_a_line_to_skip_or_strip_is_not_clean(block, first):
    assert clean_block_lines(first, block) is None


def test_a_clean_block_is_its_text_line_count_and_longest_line():
    assert clean_block_lines(9, b'{"a":1}\n{"bb":22}\n') == (b'{"a":1}\n{"bb":22}', 2, 9)
    assert clean_block_lines(9, b'{"a":1}') == (b'{"a":1}', 1, 7)


def _decoded(chunk):
    out = {"events": [], "rejects": [], "counts": []}
    for item in DecodeChunk(GamingDayConfig()).process(chunk):
        tag = getattr(item, "tag", None)
        value = getattr(item, "value", item)
        if tag is None:
            t = unpack(value[1])
            out["events"] += sorted(zip(t.column("line").to_pylist(), t.column("event_id").to_pylist()))
        elif tag == TAG_REJECTS:
            out["rejects"] += [(r["line"], r["reason"]) for r in value]
        elif tag == TAG_COUNTS:
            out["counts"].append(value)
    return out


def test_clean_block_decodes_like_the_same_lines_one_by_one():
    lines = [line(seq=1), line(seq=2, table_id="BAC-08"), line(seq=3, card="Zz"), "not json", line(seq=5)]
    text = "".join(l + "\n" for l in lines).encode()
    assert clean_block_lines(7, text) is not None
    whole = _decoded(("f.jsonl", "jsonl", (7, text)))
    by_line = _decoded(("f.jsonl", "jsonl", (7, text.replace(b"\n", b"\r\n"))))   # CRLF: split line by line
    assert whole == by_line
    assert sorted(n for n, _ in whole["events"]) == [7, 8, 11]
    assert [n for n, _ in whole["rejects"]] == [9, 10]
    assert whole["counts"] == [{"read": 5, "rejected": 2}]


def test_blank_lines_keep_their_physical_numbers_and_are_not_counted():
    text = ("\n" + line(seq=1) + "\n\n" + line(seq=2) + "\n").encode()
    out = _decoded(("f.jsonl", "jsonl", (1, text)))
    assert [n for n, _ in out["events"]] == [2, 4]
    assert out["counts"] == [{"read": 2, "rejected": 0}]
