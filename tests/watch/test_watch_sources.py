"""The file follower in bounded memory (live/sources.py, issue 28): an over-long line is rejected and
the file followed on, whatever the line's length and however it is written; damaged gzip files give
the lines before the damage.  Real files."""
from __future__ import annotations

import gzip
import json

from pitwatch.live.sources import FileFollower
from pitwatch.schemas.decode import GamingDayConfig, Reject, decode_line
from pitwatch.schemas.limits import MAX_LINE_BYTES


def _good(n: int) -> bytes:
    return json.dumps({"n": n}).encode()


def _read_all(follower: FileFollower, turns: int = 50) -> list:
    out = []
    for _ in range(turns):
        out += follower.read()
    return out


def test_a_5_mb_line_is_rejected_and_the_next_lines_are_read(tmp_path):
    path = tmp_path / "dev.jsonl"
    path.write_bytes(_good(1) + b"\n" + b"x" * (5 << 20) + b"\n" + b"\n".join(_good(n) for n in range(2, 22)) + b"\n")
    f = FileFollower([str(path)])
    lines = _read_all(f)
    assert [ln.line for ln in lines] == list(range(1, 23))          # the 20 lines after it are read
    assert max(len(ln.raw) for ln in lines) == MAX_LINE_BYTES + 1   # never more than the limit held
    out = decode_line(lines[1].raw, lines[1].file, lines[1].line, GamingDayConfig())
    assert isinstance(out, Reject) and out.reason.startswith(f"line longer than {MAX_LINE_BYTES} bytes")
    assert [json.loads(ln.raw)["n"] for ln in lines[2:]] == list(range(2, 22))


def test_an_over_long_line_written_in_parts_is_rejected_once_and_skipped_across_a_restart(tmp_path):
    path = tmp_path / "dev.jsonl"
    with open(path, "wb") as w:
        w.write(_good(1) + b"\n" + b"y" * (MAX_LINE_BYTES + 10))    # no line end yet
        w.flush()
        f = FileFollower([str(path)])
        first = _read_all(f, 3)
        assert [ln.line for ln in first] == [1, 2]                   # rejected as soon as it is too long
        w.write(b"y" * (3 << 20))                                     # more of it, still no line end
        w.flush()
        assert _read_all(f, 3) == []
        pos = f.position()                                            # the checkpoint, mid-skip
        w.write(b"y" * 100 + b"\n" + _good(3) + b"\n")
        w.flush()
    again = FileFollower([str(path)])
    again.restore(pos)
    rest = _read_all(again, 3)
    assert [(ln.line, json.loads(ln.raw)["n"]) for ln in rest] == [(3, 3)]


def test_a_line_just_within_the_limit_is_read_whole(tmp_path):
    path = tmp_path / "dev.jsonl"
    body = b'{"pad": "' + b"z" * (MAX_LINE_BYTES - 11) + b'"}'
    assert len(body) == MAX_LINE_BYTES
    path.write_bytes(body + b"\n" + _good(2) + b"\n")
    lines = _read_all(FileFollower([str(path)]))
    assert [len(ln.raw) for ln in lines] == [MAX_LINE_BYTES, len(_good(2))]


def test_damaged_gzip_files_give_their_lines_before_the_damage_and_are_counted(tmp_path):
    whole = gzip.compress(b"\n".join(_good(n) for n in range(1, 2001)) + b"\n")
    (tmp_path / "cut.jsonl.gz").write_bytes(whole[: len(whole) // 2])        # cut short
    (tmp_path / "garbage.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"not deflate at all" * 50)
    (tmp_path / "not-gzip.jsonl.gz").write_bytes(b'{"n": 1}\n')
    (tmp_path / "good.jsonl.gz").write_bytes(gzip.compress(_good(7) + b"\n" + _good(8)))   # no final '\n'
    f = FileFollower([str(tmp_path)])
    lines = _read_all(f)
    by_file: dict[str, list] = {}
    for ln in lines:
        by_file.setdefault(ln.file.rsplit("/", 1)[1], []).append(json.loads(ln.raw)["n"])
    assert by_file["good.jsonl.gz"] == [7, 8]
    cut = by_file["cut.jsonl.gz"]
    assert cut == list(range(1, len(cut) + 1)) and 0 < len(cut) < 2000  # the lines before the damage
    assert sorted(p.rsplit("/", 1)[1] for p in f.damaged) == ["cut.jsonl.gz", "garbage.jsonl.gz",
                                                             "not-gzip.jsonl.gz"]
    assert _read_all(f, 3) == []                                     # not read again
    again = FileFollower([str(tmp_path)])
    again.restore(f.position())
    assert _read_all(again, 3) == [] and again.damaged == f.damaged  # nor after a restart
