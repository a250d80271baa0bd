"""Reading JSONL in blocks gives the lines, numbers and order of reading it line by line."""
from __future__ import annotations

import gzip

import pytest
from apache_beam.pvalue import TaggedOutput
from hypothesis import given, settings
from hypothesis import strategies as st

from pitwatch.inputs.files import LineBlock, iter_jsonl_chunks, iter_line_chunks
from pitwatch.pipelines.ingest import DecodeChunk, ReadChunks
from pitwatch.schemas.decode import GamingDayConfig
from tests.conftest import line

_PIECES = [b'{"a":1}', b'{"b":"x y"}', b"", b"   ", b"\t", b" {\"c\":2}", b'{"d":3}\r', b"\x0b", b"\xef\xbb\xbf{}",
           b"x" * 300, b"not json", b"\xff\xfe"]


def _lines_of(chunks) -> list[tuple[int, bytes]]:
    out = []
    for items in chunks:
        out.extend(items[i] for i in range(len(items)))
    return out


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from(_PIECES), max_size=40), bom=st.booleans(), end=st.sampled_from([b"", b"\n", b"\r\n"]),
       chunk_lines=st.integers(1, 7), block_size=st.integers(1, 64))
def test_blocks_hold_the_lines_of_the_line_reader(tmp_path_factory, pieces, bom, end, chunk_lines, block_size):
    path = tmp_path_factory.mktemp("f") / "f.jsonl"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + b"\n".join(pieces) + (end if pieces else b""))
    expected = [item for _, items in iter_line_chunks(str(path), chunk_lines) for item in items]
    chunks = list(iter_jsonl_chunks(str(path), chunk_lines, block_size=block_size))
    assert _lines_of(chunks) == expected
    assert all(0 < len(items) <= chunk_lines for items in chunks)


def test_plain_lines_come_as_blocks_and_the_rest_line_by_line(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"a":1}\n{"a":2}\n{"a":3}\n\n{"a":5}\n{"a":6}\n')
    chunks = list(iter_jsonl_chunks(str(path), 3))
    assert isinstance(chunks[0], LineBlock) and chunks[0].data == b'{"a":1}\n{"a":2}\n{"a":3}'
    assert chunks[0].line_numbers().tolist() == [1, 2, 3] and chunks[0].longest == 7
    assert chunks[0][-1] == chunks[0][2] == (3, b'{"a":3}')
    assert chunks[1] == [(5, b'{"a":5}'), (6, b'{"a":6}')]     # the blank line 4 is skipped, as line by line


def test_a_gzip_file_reads_as_blocks_too(tmp_path):
    path = tmp_path / "f.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"a":1}\n{"a":2}\n'))
    chunks = list(iter_jsonl_chunks(str(path), 10))
    assert len(chunks) == 1 and isinstance(chunks[0], LineBlock) and chunks[0][1] == (2, b'{"a":2}')


@pytest.mark.parametrize("bad", [None, 2])
def test_a_block_decodes_as_its_lines_do(tmp_path, bad):
    """The columnar decoder reads a block as it is, and its rows sent back per line are found by number."""
    lines = [line(seq=s) for s in range(1, 6)]
    if bad is not None:
        lines[bad] = line(seq=bad + 1, card="Zz")
    path = tmp_path / "f.jsonl"
    path.write_text("\n".join(lines) + "\n")
    decode = DecodeChunk(GamingDayConfig())

    def outputs(chunk):
        return [(o.tag, o.value) if isinstance(o, TaggedOutput) else ("events", o) for o in decode.process(chunk)]

    block = next(ReadChunks(100).process(str(path)))
    assert isinstance(block[2], LineBlock)
    as_block = outputs(block)
    assert as_block == outputs((str(path), "jsonl", [(i + 1, s.encode()) for i, s in enumerate(lines)]))
    rejected = [r["line"] for tag, rows in as_block if tag == "rejects" for r in rows]
    assert rejected == ([] if bad is None else [bad + 1])
    assert sum(value.num_rows for tag, value in as_block if tag == "events") == 5 - len(rejected)
