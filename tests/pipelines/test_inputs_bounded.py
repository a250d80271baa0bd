"""Inputs are files, bounded (issue 37, deliverable 1): each attack replayed as written.

* A FIFO and a link to ``/dev/zero`` among good files, in both forms (``pitwatch run FOLDER`` and
  the nightly ``--day --inbox``): the run completes, the good files' rows are in the lake, the odd
  files are named with the reason (stderr, the summary, the run record), the lake's lock is free
  after (the next run is not exit 4) and ``pitwatch verify`` exits 0.
* A gzip bomb of ``{}`` lines: its rejects are written as they stream (the child's peak RSS stays
  under a bound), and after ``--max-rejects-in-a-row`` rejected lines in a row the file is read no
  further: an ``INPUT_DAMAGED`` finding with that reason.  A file of as many bad lines less one,
  then a good one, is read to its end.

Each is a real ``pitwatch run`` process with a timeout: a hang fails, it does not block.
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pitwatch.cli import exits
from tests import lake_rows
from tests.conftest import run_pitwatch_process as pitwatch  # a real process: runs
from tests.pipelines.test_input_damaged import dealer_bytes

ROOT = Path(__file__).resolve().parents[2]
DAY = "2026-11-28"


def pitwatch_rss(*args, timeout: float = 300) -> tuple[int, str, str, int]:
    """Exit code, stdout, stderr and peak RSS in bytes (``os.wait4``) of a ``pitwatch`` child process;
    killed after ``timeout`` seconds (a hang fails the test)."""
    import tempfile
    import threading

    env = {k: v for k, v in os.environ.items() if not k.startswith("PITWATCH_")}
    env["PYTHONPATH"] = str(ROOT)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "pitwatch.cli", *map(str, args)], stdout=out, stderr=err,
                                env=env)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _pid, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return proc.returncode, out.read().decode(), err.read().decode(), usage.ru_maxrss * 1024


def odd_folder(folder: Path) -> None:
    """Two dealer terminals' good files, a FIFO and a link to /dev/zero named as inputs."""
    folder.mkdir(parents=True)
    (folder / "DT-1.jsonl").write_bytes(dealer_bytes(30))
    (folder / "DT-9.jsonl.gz").write_bytes(gzip.compress(dealer_bytes(30).replace(b'"DT-', b'"DT9-')))
    os.mkfifo(folder / "evil.jsonl")
    os.symlink("/dev/zero", folder / "zero.jsonl")


def good_rows(lake: Path) -> set[tuple]:
    return {(os.path.basename(r["file"]), r["line"]) for r in lake_rows.dicts(lake, "events")}


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_and_a_link_to_dev_zero_are_refused_in_both_forms_and_the_good_files_go_in(tmp_path):
    folder = tmp_path / "inbox" / DAY
    odd_folder(folder)
    lake = tmp_path / "lake"
    expected = {(name, n) for name in ("DT-1.jsonl", "DT-9.jsonl.gz") for n in range(1, 31)}

    one_off = pitwatch("run", folder, "--lake", lake)
    assert one_off.returncode == exits.DONE, one_off.stderr
    assert good_rows(lake) == expected
    fifo = f"{folder / 'evil.jsonl'}: not a regular file: a FIFO (named pipe): not read"
    zero = f"{folder / 'zero.jsonl'}: not a regular file: a link to a character device (/dev/zero): not read"
    assert f"  refused     {fifo}" in one_off.stdout and f"  refused     {zero}" in one_off.stdout
    assert f"input {fifo.replace(': not a', ' refused: not a', 1)}" in one_off.stderr
    record = json.loads(lake_rows.run_records(lake)[-1]["options"])
    assert record["inputs_refused"] == [
        {"path": str(folder / "evil.jsonl"), "reason": "not a regular file: a FIFO (named pipe): not read"},
        {"path": str(folder / "zero.jsonl"),
         "reason": "not a regular file: a link to a character device (/dev/zero): not read"}]

    # the lock is free: the nightly form over the same folder runs (not exit 4), and refuses the same two
    night = pitwatch("run", "--day", DAY, "--inbox", tmp_path / "inbox", "--lake", lake)
    assert night.returncode == exits.DONE, night.stderr
    assert good_rows(lake) == expected          # the same files read again: their rows replaced, not doubled
    assert f"  refused     {fifo}" in night.stdout and f"  refused     {zero}" in night.stdout
    record = json.loads(lake_rows.run_records(lake)[-1]["options"])
    assert {"path": f"{DAY}/evil.jsonl", "reason": "not a regular file: a FIFO (named pipe): not read"} \
        in record["inbox_skipped"]
    assert [f["path"] for f in record["inputs_refused"]] == [str(folder / "evil.jsonl"), str(folder / "zero.jsonl")]
    assert [r["status"] for r in lake_rows.run_records(lake)] == ["succeeded", "succeeded"]
    assert pitwatch("verify", "--lake", lake).returncode == exits.DONE
    # the lake holds what a night of the good files alone gives, row for row (but the folder in ``file``)
    clean = tmp_path / "clean"
    (clean / DAY).mkdir(parents=True)
    for name in ("DT-1.jsonl", "DT-9.jsonl.gz"):
        (clean / DAY / name).write_bytes((folder / name).read_bytes())
    alone = tmp_path / "alone"
    assert pitwatch("run", "--day", DAY, "--inbox", clean, "--lake", alone).returncode == exits.DONE
    for table in ("events", "rejects", "rounds", "packs", "findings"):
        assert lake_rows.rows(lake, table, exclude=("file",)) == lake_rows.rows(alone, table, exclude=("file",))

    # --strict-inbox makes them an error, as any file the inbox holds that pitwatch does not read
    strict = pitwatch("run", "--day", DAY, "--inbox", tmp_path / "inbox", "--lake", lake, "--strict-inbox")
    assert strict.returncode == exits.USAGE
    assert "evil.jsonl (not a regular file: a FIFO (named pipe): not read)" in strict.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_nothing_but_a_fifo_is_nothing_to_read(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    os.mkfifo(folder / "evil.jsonl")
    result = pitwatch("run", folder, "--lake", tmp_path / "lake", timeout=60)
    assert result.returncode == exits.USAGE
    assert result.stderr.strip().endswith(
        f"no input file to read: {folder / 'evil.jsonl'} (not a regular file: a FIFO (named pipe): not read)")


def test_a_file_swapped_for_a_fifo_after_the_listing_is_refused_at_the_open(tmp_path):
    from pitwatch.config import NotRegularFile
    from pitwatch.inputs.stored import TextBlocks, open_stored

    path = tmp_path / "a.jsonl"
    os.mkfifo(path)
    with pytest.raises(NotRegularFile, match="a FIFO"):
        open_stored(str(path))
    blocks = TextBlocks(str(path))
    assert list(blocks) == []
    assert blocks.damage.offset == 0 and "not a regular file: a FIFO (named pipe)" in blocks.damage.what


def bomb(path: Path, lines: int) -> Path:
    """A gzip bomb as the attack had it: ``{}`` lines (each rejected: no field of the contract)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(b"{}\n" * lines, compresslevel=9))
    return path


@pytest.mark.slow
def test_a_gzip_bomb_is_read_in_flat_memory_and_stops_after_the_rejects_in_a_row(tmp_path):
    import hashlib

    from pitwatch.rules.finding import finding_id

    # the guard off: every one of 200k rejected lines is a row, in the memory of a bomb half as large
    # (measured: 100k lines 320-333 MB, 200k 356-368, 1M 365: the rows are written 64Ki at a time)
    small = tmp_path / "small"
    bomb(small / "few.jsonl.gz", 100_000)
    code, _out, err, rss_small = pitwatch_rss("run", small, "--lake", tmp_path / "l0", "--max-rejects-in-a-row", 0)
    assert code == exits.DONE, err
    big = tmp_path / "big"
    bomb(big / "bomb.jsonl.gz", 200_000)
    code, out, err, rss_big = pitwatch_rss("run", big, "--lake", tmp_path / "l1", "--max-rejects-in-a-row", 0)
    assert code == exits.DONE, err
    assert "lines read  200,000 = accepted 0 + rejected 200,000" in out
    assert len(lake_rows.table(tmp_path / "l1", "rejects", ["line"])) == 200_000
    assert rss_big - rss_small < 90 << 20, (rss_small >> 20, rss_big >> 20)    # ~1.8 KB a line before: 180 MB

    # the guard on (its default, 10,000): the bomb is read no further, a file of 9,999 bad lines then a
    # good one is read to its end
    box = tmp_path / "box"
    path = bomb(box / "bomb.jsonl.gz", 200_000)
    (box / "DT-1.jsonl").write_bytes(b"{}\n" * 9_999 + dealer_bytes(1))
    lake = tmp_path / "lake"
    result = pitwatch("run", box, "--lake", lake)
    assert result.returncode == exits.DONE, result.stderr
    assert "lines read  20,000 = accepted 1 + rejected 19,999" in result.stdout
    rejects = lake_rows.dicts(lake, "rejects")
    per_file = {name: sum(os.path.basename(r["file"]) == name and r["line"] is not None for r in rejects)
                for name in ("bomb.jsonl.gz", "DT-1.jsonl")}
    assert per_file == {"bomb.jsonl.gz": 10_000, "DT-1.jsonl": 9_999}
    assert [(os.path.basename(r["file"]), r["line"]) for r in lake_rows.dicts(lake, "events")] == [("DT-1.jsonl", 10_000)]
    stored = path.read_bytes()
    what = ("its last 10,000 lines in a row were all rejected (to line 10,000; --max-rejects-in-a-row 10,000): "
            "it is read no further")
    assert f"  damaged     {path}: damaged file: {what}, at byte {len(stored):,}" in result.stdout or \
        f"  damaged     {path}: damaged file: {what}, at byte " in result.stdout
    [finding] = [f for f in lake_rows.dicts(lake, "findings") if f["rule_id"] == "INPUT_DAMAGED"]
    offset = int(result.stdout.split(f"{what}, at byte ")[1].split(";")[0].replace(",", ""))
    sha = hashlib.sha256(stored[:offset]).hexdigest()
    assert finding["finding_id"] == finding_id("INPUT_DAMAGED", None, ["bomb.jsonl.gz", sha], ())
    assert what in finding["actual"] and sha in finding["actual"]
    assert pitwatch("verify", "--lake", lake).returncode == exits.DONE


def _decoded(outputs) -> tuple[list, list, dict]:
    """Events (as row dicts), reject rows and counts of what ReadAndDecode yields."""
    from pitwatch.pipelines.ingest import TAG_COUNTS, TAG_REJECTS

    events, rejects, counts = [], [], {}
    for out in outputs:
        tag = getattr(out, "tag", None)
        if tag is None:
            events += [{k: v for k, v in row.items() if v is not None} for row in out.to_pylist()]
        elif tag == TAG_REJECTS:
            rejects += out.value
        elif tag == TAG_COUNTS:
            for k, v in out.value.items():
                counts[k] = counts.get(k, 0) + v if not isinstance(v, list) else counts.get(k, []) + v
    key = lambda r: (r["file"], r["line"] if r["line"] is not None else 1 << 62)   # noqa: E731
    return sorted(events, key=key), sorted(rejects, key=key), counts


def test_small_files_read_together_give_what_each_read_alone_gives(tmp_path):
    """Many small files are decoded in one pass (JoinedLines): the same events, rejects (in (file, line)
    order) and counts as each file read alone, whatever they hold."""
    from pitwatch.pipelines.ingest import ReadAndDecode, input_groups
    from pitwatch.schemas.decode import GamingDayConfig

    good = dealer_bytes(12).splitlines(keepends=True)
    files = {
        "a.jsonl": good[0],
        "b.jsonl": good[1] + b'{"type": "bet_placed"}\n' + good[2],         # a rejected line between two good
        "c.jsonl": b"",                                                       # nothing to read
        "d.jsonl": good[3].replace(b"\n", b"\r\n") + b"\n" + good[4],         # CRLF and a blank: read alone
        "e.jsonl.gz": gzip.compress(good[5] + b"{}\n"),
        "f.jsonl.gz": gzip.compress(good[6] + good[7])[:-4],                  # no length: damage, read alone
        "g.jsonl": good[8] + b"not json\n" + good[9],                         # a line not starting with {
        "h.jsonl": good[10] + good[11],
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    paths = sorted(str(tmp_path / name) for name in files)
    assert input_groups(paths) == [paths]
    step = ReadAndDecode(100, GamingDayConfig())
    together = _decoded(step.process(paths))
    alone = _decoded(out for path in paths for out in step.process(path))
    assert together == alone
    events, rejects, counts = together
    assert len(events) == 12 and counts["read"] == 15 and counts["damaged_files"] == 1
    assert [(os.path.basename(r["file"]), r["line"]) for r in rejects] == [
        ("b.jsonl", 2), ("e.jsonl.gz", 2), ("f.jsonl.gz", None), ("g.jsonl", 2)]


@pytest.mark.slow
def test_many_one_line_files_give_the_lake_one_file_of_the_same_lines_gives(tmp_path):
    """The 5,000-file attack, smaller: one-line files are read in groups (one decode, staged file and
    replay read per group), and the lake holds the rows the same lines in one file give."""
    lines = dealer_bytes(300).splitlines(keepends=True)
    many, one = tmp_path / "many", tmp_path / "one"
    many.mkdir()
    one.mkdir()
    for i, line in enumerate(lines):
        (many / f"DT-{i:04d}.jsonl").write_bytes(line)
    (one / "DT.jsonl").write_bytes(b"".join(lines))
    for source in (many, one):
        result = pitwatch("run", source, "--lake", tmp_path / f"lake-{source.name}")
        assert result.returncode == exits.DONE, result.stderr
        assert "lines read  300 = accepted 300 + rejected 0" in result.stdout
    for table in ("events", "rounds", "packs", "findings", "rejects"):
        assert lake_rows.rows(tmp_path / "lake-many", table, exclude=("file", "line")) == \
            lake_rows.rows(tmp_path / "lake-one", table, exclude=("file", "line")), table
    assert sorted((os.path.basename(r["file"]), r["line"]) for r in lake_rows.dicts(tmp_path / "lake-many", "events")) \
        == [(f"DT-{i:04d}.jsonl", 1) for i in range(300)]
    assert pitwatch("verify", "--lake", tmp_path / "lake-many").returncode == exits.DONE


def test_a_gzip_bomb_is_decompressed_a_mebibyte_at_a_time(tmp_path):
    """64 KiB of a bomb decompress to ~64 MB: zlib is asked for at most 1 MiB a call, so a read block
    stays near its size (4 MiB), and the line reader's blocks too (1 MiB), whatever the ratio."""
    from pitwatch.inputs.stored import TextBlocks

    path = bomb(tmp_path / "b.jsonl.gz", 3_000_000)           # 9 MB of lines in 9 KB
    blocks = TextBlocks(str(path))
    sizes = [len(b) for b in blocks]
    assert sum(sizes) == 9_000_000 and blocks.damage is None
    assert max(sizes) <= (4 << 20) + (1 << 20)


def test_a_device_registry_that_is_a_fifo_or_dev_zero_is_refused_not_read(tmp_path):
    from pitwatch.inputs.devices import RegistryError, load_registry

    os.mkfifo(tmp_path / "devices.csv")
    with pytest.raises(RegistryError, match="not a regular file: a FIFO"):
        load_registry(str(tmp_path / "devices.csv"))
    with pytest.raises(RegistryError, match="not a regular file: a character device"):
        load_registry("/dev/zero")
