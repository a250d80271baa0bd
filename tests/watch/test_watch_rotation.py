"""Files as log shippers treat them (issue 41, deliverable 5; live/sources.py): a rotated file is read
to its end under its new name before the new file at its old name, a truncated or replaced file is
detected even when it grew past the old offset, and what was never read is a rejected span with its
reason, never a silent loss or a mid-line fragment; a flood in one file does not starve the others.

The fine cases on :class:`FileFollower` over real files (fast); then real ``pitwatch watch`` processes,
made to lag with SIGSTOP while the device writes its last lines and the file is rotated."""
from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import time

import pytest

from pitwatch.live.sources import DETACHED, LOST, FileFollower
from tests.watch.conftest import append_lines
from tests.watch.scenario import interleave, write_batch_input
from tests.watch.test_watch_hostile_feed import _adds_up, _summary


def _write(path, numbers) -> None:
    with open(path, "ab") as f:
        f.write(b"".join(json.dumps({"n": n}).encode() + b"\n" for n in numbers))


def _turns(follower: FileFollower, turns: int = 20) -> list[tuple[str, int, int]]:
    """(file name, line, n) of every line ``turns`` reads hand out, in order."""
    out = []
    for _ in range(turns):
        out += [(os.path.basename(ln.file), ln.line, json.loads(ln.raw)["n"]) for ln in follower.read()]
    return out


# --- rename-then-create (logrotate's default) ---------------------------------------------------

@pytest.mark.parametrize("rotated_name", ["dev.jsonl.1", "dev-20261207.jsonl"])
def test_rename_then_create_reads_the_tail_under_the_new_name_before_the_new_file(tmp_path, rotated_name):
    """The device's last lines were written just before the rename, and not read yet: they come from
    the renamed file (by its new name, numbered on), then the new file's lines; each once.  The
    ``dateext`` name the folder's pattern matches is not read again from its start."""
    dev = tmp_path / "dev.jsonl"
    _write(dev, range(1, 6))
    f = FileFollower([str(tmp_path)], scan_every=0)
    assert [n for *_x, n in _turns(f, 2)] == [1, 2, 3, 4, 5]
    _write(dev, range(6, 11))                        # the last lines, not read yet …
    os.rename(dev, tmp_path / rotated_name)          # … then rotated away, and a new file created
    _write(dev, range(11, 14))
    got = _turns(f)
    assert got == [(rotated_name, k, k) for k in range(6, 11)] + [("dev.jsonl", k - 10, k) for k in range(11, 14)]
    assert f.take_lost() == []


def test_rename_with_the_writer_still_writing_to_the_renamed_file_loses_nothing(tmp_path):
    """Before logrotate's postrotate tells the device to open the new file, it writes on into the
    renamed one: those lines are read there too (the renamed file is followed until quiet)."""
    dev = tmp_path / "dev.jsonl"
    with open(dev, "ab", buffering=0) as device:
        device.write(b'{"n": 1}\n')
        f = FileFollower([str(tmp_path)], scan_every=0)
        assert [n for *_x, n in _turns(f, 1)] == [1]
        os.rename(dev, tmp_path / "dev.jsonl.1")
        device.write(b'{"n": 2}\n')                   # still into the renamed file
        first = _turns(f, 2)
        device.write(b'{"n": 3}\n')                   # and once more, a moment later
        _write(dev, [4])                              # then into the new file
        got = first + _turns(f)
    assert got == [("dev.jsonl.1", 2, 2), ("dev.jsonl.1", 3, 3), ("dev.jsonl", 1, 4)]


def test_a_numbered_rotation_chain_moves_each_position_with_its_file(tmp_path):
    """``.1`` → ``.2``, the followed file → ``.1``: both tails read, under their current names."""
    dev = tmp_path / "dev.jsonl"
    _write(dev, [1])
    f = FileFollower([str(tmp_path)], scan_every=0)
    _turns(f, 1)
    _write(dev, [2])
    os.rename(dev, tmp_path / "dev.jsonl.1")
    _write(dev, [3])
    assert [n for *_x, n in _turns(f, 1)] == []      # the renamed file first: its tail next turn
    _write(tmp_path / "dev.jsonl.1", [20])           # the writer's last line into the renamed file
    os.rename(tmp_path / "dev.jsonl.1", tmp_path / "dev.jsonl.2")
    _write(dev, [4])
    os.rename(dev, tmp_path / "dev.jsonl.1")         # rotated again before the new file was read
    _write(dev, [5])
    got = _turns(f)
    assert sorted(n for *_x, n in got) == [2, 3, 4, 5, 20]
    assert ("dev.jsonl.2", 2, 2) in got and ("dev.jsonl.2", 3, 20) in got and ("dev.jsonl.1", 1, 3) in got
    assert got[-1] == ("dev.jsonl", 1, 5)


def test_a_file_moved_out_of_its_folder_is_read_to_its_end_through_its_handle(tmp_path):
    """Moved elsewhere (or deleted) with lines not read: read through the file still open, labelled
    with its old name and the mark; the new file after."""
    (tmp_path / "live").mkdir()
    (tmp_path / "old").mkdir()
    dev = tmp_path / "live" / "dev.jsonl"
    _write(dev, [1])
    f = FileFollower([str(tmp_path / "live")], scan_every=0)
    _turns(f, 1)
    _write(dev, [2, 3])
    os.rename(dev, tmp_path / "old" / "dev.jsonl")
    _write(dev, [4])
    lines = [ln for _ in range(5) for ln in f.read()]
    assert [(ln.file, ln.line) for ln in lines] == [(f"{dev} {DETACHED}", 2), (f"{dev} {DETACHED}", 3),
                                                    (str(dev), 1)]


def test_a_rename_while_the_watcher_was_stopped_resumes_under_the_new_name(tmp_path):
    """The position says inode and first bytes: after a restart the renamed file is found by them."""
    dev = tmp_path / "dev.jsonl"
    _write(dev, range(1, 4))
    f = FileFollower([str(tmp_path)], scan_every=0)
    _turns(f, 1)
    position = f.position()
    f.close()
    _write(dev, [4, 5])
    os.rename(dev, tmp_path / "dev.jsonl.1")
    _write(dev, [6])
    again = FileFollower([str(tmp_path)], scan_every=0)
    again.restore(json.loads(json.dumps(position)))   # as the checkpoint holds it
    assert _turns(again) == [("dev.jsonl.1", 4, 4), ("dev.jsonl.1", 5, 5), ("dev.jsonl", 1, 6)]


# --- copytruncate and replacement ----------------------------------------------------------------

def _lagging(tmp_path, first: int = 10, read: int = 4) -> tuple:
    """A file of ``first`` lines of which the follower has read ``read`` (it lags: it saw the rest)."""
    dev = tmp_path / "live" / "dev.jsonl"
    dev.parent.mkdir()
    _write(dev, range(1, first + 1))
    f = FileFollower([str(dev.parent)], scan_every=0, max_lines=read)
    assert [n for *_x, n in _turns(f, 1)] == list(range(1, read + 1))
    return dev, f


@pytest.mark.parametrize("new_lines", [2, 40], ids=["shorter", "grown-past-the-offset"])
def test_copytruncate_with_the_copy_elsewhere_is_a_lost_span_with_its_reason_never_a_fragment(
        tmp_path, new_lines):
    """The copy went to another folder (``olddir``): the 6 lines seen and never read are one
    rejected span, at line 5 of the old content, with its reason; the new content is read from its
    first line, whole lines only — also when it grew past the old offset (its first bytes differ)."""
    dev, f = _lagging(tmp_path)
    (tmp_path / "old").mkdir()
    shutil.copy(dev, tmp_path / "old" / "dev.jsonl.1")
    os.truncate(dev, 0)
    _write(dev, range(100, 100 + new_lines))
    got = _turns(f, 30)
    assert got == [("dev.jsonl", k + 1, 100 + k) for k in range(new_lines)]
    lost = f.take_lost()
    assert len(lost) == 1
    line, reason = lost[0]
    assert (line.file, line.line) == (f"{dev} {LOST}", 5)
    missed = sum(len(json.dumps({"n": n})) + 1 for n in range(5, 11))
    assert "truncated or replaced" in reason and f" {missed} byte(s) or more after line 4 " in reason


def test_copytruncate_with_the_copy_beside_it_is_read_on_from_the_copy(tmp_path):
    """logrotate's default: the copy in the same folder (a name the pattern does not follow): the
    lines not read yet come from it, then the new content; nothing lost, nothing twice."""
    dev, f = _lagging(tmp_path)
    shutil.copy(dev, dev.parent / "dev.jsonl.1")
    os.truncate(dev, 0)
    _write(dev, range(100, 140))
    got = _turns(f, 30)
    assert got == [("dev.jsonl.1", k, k) for k in range(5, 11)] + [("dev.jsonl", k + 1, 100 + k) for k in range(40)]
    assert f.take_lost() == []


def test_a_file_rewritten_in_place_past_the_offset_is_read_from_its_start(tmp_path):
    """Same inode, same or larger size, other first bytes: the old follower read on at the old
    offset, mid-line; now it is the new content from its first line."""
    dev = tmp_path / "dev.jsonl"
    _write(dev, [1, 2])
    f = FileFollower([str(tmp_path)], scan_every=0)
    _turns(f, 1)
    with open(dev, "r+b") as w:                      # same inode: rewritten from byte 0
        w.write(b"".join(json.dumps({"n": n, "pad": "x" * 7}).encode() + b"\n" for n in (7, 8, 9)))
    assert _turns(f) == [("dev.jsonl", 1, 7), ("dev.jsonl", 2, 8), ("dev.jsonl", 3, 9)]
    assert f.take_lost() == []                        # everything seen had been read


def test_no_rotation_reads_every_line_once_and_loses_nothing(tmp_path):
    """The control: lines appended in many small writes, read in bounded turns; nothing lost."""
    dev = tmp_path / "dev.jsonl"
    f = FileFollower([str(tmp_path)], scan_every=0, max_lines=7)
    got = []
    for start in range(0, 300, 30):
        _write(dev, range(start, start + 30))
        got += _turns(f, 2)
    got += _turns(f, 30)
    assert [n for *_x, n in got] == list(range(300)) and [k for _f, k, _n in got] == list(range(1, 301))
    assert f.take_lost() == []


# --- a name that cannot be read ----------------------------------------------------------------

@pytest.mark.parametrize("what", ["a folder", "a FIFO"])
def test_a_followed_name_turned_into_something_unreadable_is_said_once_and_the_other_files_read_on(
        tmp_path, caplog, what):
    """A followed file replaced by a folder (an insider's ``rm; mkdir``) made ``open`` raise
    IsADirectoryError out of the loop: the watcher stopped mid-shift.  Any such name (a folder, a FIFO
    that ``open`` would block on) is now said once and tried again at every turn; the other files are
    read on, and the name is read again once it is a file."""
    dev, other = tmp_path / "dev.jsonl", tmp_path / "other.jsonl"
    _write(dev, [1])
    _write(other, [100])
    f = FileFollower([str(tmp_path)], scan_every=0, rotate_wait=0)    # the file unlinked: no tail to wait for
    assert sorted(n for *_x, n in _turns(f, 2)) == [1, 100]
    dev.unlink()
    dev.mkdir() if what == "a folder" else os.mkfifo(dev)
    _write(other, [101])
    with caplog.at_level("WARNING", logger="pitwatch"):
        assert [n for *_x, n in _turns(f, 3)] == [101]
    said = [r.getMessage() for r in caplog.records if "cannot be read" in r.getMessage()]
    assert len(said) == 1 and str(dev) in said[0] and "not a regular file" in said[0]
    dev.rmdir() if what == "a folder" else dev.unlink()
    _write(dev, [2, 3])         # (it may get the old file's inode again: told apart by its first bytes)
    assert [n for *_x, n in _turns(f, 3)] == [2, 3]
    assert f.take_lost() == []


def test_an_input_file_rotated_away_is_not_lost_while_its_renamed_file_is_written(tmp_path):
    """logrotate's ``nocreate`` (or a device that makes its new file at its next line): the named input
    is gone while its file is read on under its new name — a rotation, not a ``SOURCE_LOST``; once the
    renamed file has been quiet for the rotation's wait and nothing came back at the name, it is."""
    from pitwatch.live.silence import SOURCE_LOST, SourceWatch

    dev = tmp_path / "dev.jsonl"
    _write(dev, [1])
    f = FileFollower([str(dev)], scan_every=0, rotate_wait=0.5)
    watch = SourceWatch([f], after=0.0, every=0.0)
    assert [n for *_x, n in _turns(f, 1)] == [1]
    _write(dev, [2])
    os.rename(dev, tmp_path / "dev.jsonl.1")
    assert [n for *_x, n in _turns(f, 2)] == [2]
    assert watch.look() == [] and not watch.failing
    time.sleep(0.6)                     # the renamed file quiet for longer than the rotation's wait
    assert [n["rule_id"] for n in watch.look()] == [SOURCE_LOST]


def test_a_rejected_line_of_the_new_file_at_a_rotated_name_is_said_though_the_old_file_had_one_there(
        tmp_path, caplog):
    """Rejects are remembered (checkpointed) so that a line read again after a restart is not said
    again; they were remembered by file and line number, and the new file at a rotated name numbers
    from 1 again: its bad line 2 was taken for yesterday's and only logged at debug."""
    import io

    from pitwatch.lake import Lake
    from pitwatch.live.service import WatchOptions, WatchService

    feed = tmp_path / "in"
    feed.mkdir()
    dev = feed / "dev.jsonl"
    dev.write_bytes(b'{"n": 1}\nnot json: monday\n')
    svc = WatchService(WatchOptions(inputs=[str(feed)], lake=Lake.at(tmp_path / "lake"), state_dir=str(tmp_path / "st"),
                                    lake_alerts=False, checkpoint_every=3600), stdout=io.BytesIO())
    try:
        with caplog.at_level("WARNING", logger="pitwatch"):
            svc.take(svc.sources[0].read())
            os.rename(dev, feed / "dev.jsonl.1")
            dev.write_bytes(b'{"n": 2}\nnot json: tuesday\n')
            for _ in range(3):
                svc.take(svc.sources[0].read())
    finally:
        svc.close()
    said = [r.getMessage().split(": ", 1)[0] for r in caplog.records if r.getMessage().startswith("rejected ")]
    assert said == [f"rejected {dev}:1", f"rejected {dev}:2"] * 2     # monday's two lines, then tuesday's
    assert svc.counts["rejected"] == 4


# --- bounded turns -----------------------------------------------------------------------------

def test_a_64_mb_flood_in_one_file_does_not_starve_another(tmp_path):
    """Each turn takes at most ``max_lines`` (500; and 4 MiB, and 20 ms of reading) of a file: the small
    file's new line comes out in the very next turn, every turn, while the flood is read."""
    flood = tmp_path / "flood.jsonl"
    row = b'{"n": 0, "pad": "' + b"f" * 100 + b'"}\n'
    with open(flood, "wb") as w:
        w.write(row * ((64 << 20) // len(row)))
    small = tmp_path / "small.jsonl"
    f = FileFollower([str(tmp_path)], scan_every=0)
    longest = 0.0
    for k in range(1, 21):
        _write(small, [k])
        t0 = time.perf_counter()
        lines = f.read()
        longest = max(longest, time.perf_counter() - t0)
        assert [json.loads(ln.raw)["n"] for ln in lines if ln.file == str(small)] == [k]
        assert sum(ln.file == str(flood) for ln in lines) <= f.max_lines
    assert f.position()["files"][str(flood)][1] < 64 << 20          # the flood is not read yet …
    print(f"longest turn over a 64 MB flood: {longest * 1000:.1f} ms")


# --- a real `pitwatch watch`, made to lag while the files are rotated ------------------------------

def _rotate_renaming(feeds, devices, suffix: str) -> None:
    """logrotate's default: each device's file renamed (``.1`` after ``.1`` → ``.2``, or a date)."""
    for dev in devices:
        path = feeds / f"{dev}.jsonl"
        if not path.exists():                        # no line yet (logrotate's missingok)
            continue
        if suffix == ".1" and (feeds / f"{dev}.jsonl.1").exists():
            os.rename(feeds / f"{dev}.jsonl.1", feeds / f"{dev}.jsonl.2")
        os.rename(path, feeds / (f"{dev}.jsonl.1" if suffix == ".1" else f"{dev}-{suffix}.jsonl"))


def _rotate_copying(feeds, devices, olddir=None) -> None:
    """logrotate's ``copytruncate``: each device's file copied (beside it, or to ``olddir``), then truncated."""
    for dev in devices:
        path = feeds / f"{dev}.jsonl"
        if not path.exists():
            continue
        shutil.copy(path, (olddir or feeds) / f"{dev}.jsonl.1")
        os.truncate(path, 0)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rename_create_rotation_while_the_watcher_lags_loses_nothing(tmp_path, scenario, batch_ids, start_watch,
                                                                     seed):
    """Three tries, two rotations each (numbered, then dated: a name the folder's pattern matches):
    the lines written just before each rotation, while the watcher was stopped, are read once; the
    stop summary counts exactly the lines written, and the alerts are the batch's findings."""
    feeds, lake = tmp_path / "feeds", tmp_path / "lake"
    order = interleave(scenario, seed=seed)
    cuts = [len(order) // 3, 2 * len(order) // 3]
    w = start_watch(feeds, "--lake", lake, "--finalize-at-stop")
    append_lines(feeds, order[:cuts[0] // 2])
    w.caught_up(cuts[0] // 2)
    # the files the watcher knows (a file made and rotated away unseen, to a name it does not follow,
    # is never read: docs/watch.md, "Rotated files")
    known = [dev for dev in scenario if (feeds / f"{dev}.jsonl").exists()]
    w.proc.send_signal(signal.SIGSTOP)               # the watcher lags …
    append_lines(feeds, order[cuts[0] // 2:cuts[0]])   # … the devices' last lines before the rotation
    _rotate_renaming(feeds, known, ".1")
    append_lines(feeds, order[cuts[0]:cuts[1]])      # new files at the old names
    w.proc.send_signal(signal.SIGCONT)
    w.caught_up(cuts[1])
    w.proc.send_signal(signal.SIGSTOP)
    _rotate_renaming(feeds, scenario, "20261207")
    append_lines(feeds, order[cuts[1]:])
    w.proc.send_signal(signal.SIGCONT)
    w.caught_up(len(order))
    assert w.stop() == 0
    s = _summary(w)
    _adds_up(s)
    assert (s["lines"], s["rejected"], s["duplicate"], s["stale"]) == (len(order), 1, 4, 0)   # the scenario's own
    ids = [a["finding_id"] for a in w.alerts]
    assert sorted(ids) == batch_ids and max(collections.Counter(ids).values()) == 1
    assert any(f"{DEALER}.jsonl was renamed to {feeds / DEALER}-20261207.jsonl: read to its end there" in e
               for e in w.errors)


@pytest.mark.slow
def test_copytruncate_rotation_while_the_watcher_lags_reads_on_from_the_copy(tmp_path, scenario, batch_ids,
                                                                            start_watch):
    """The copy beside the file (``.1``, a name not followed): the lines not read before the
    truncation come from the copy; nothing lost, no fragment, the batch's findings exactly."""
    feeds, lake = tmp_path / "feeds", tmp_path / "lake"
    order = interleave(scenario, seed=4)
    cut = len(order) // 2
    w = start_watch(feeds, "--lake", lake, "--finalize-at-stop")
    append_lines(feeds, order[:cut // 2])
    w.caught_up(cut // 2)
    known = [dev for dev in scenario if (feeds / f"{dev}.jsonl").exists()]
    w.proc.send_signal(signal.SIGSTOP)
    append_lines(feeds, order[cut // 2:cut])
    _rotate_copying(feeds, known)
    append_lines(feeds, order[cut:])
    w.proc.send_signal(signal.SIGCONT)
    w.caught_up(len(order))
    assert w.stop() == 0
    s = _summary(w)
    _adds_up(s)
    assert (s["lines"], s["rejected"], s["duplicate"], s["stale"]) == (len(order), 1, 4, 0)
    assert sorted(a["finding_id"] for a in w.alerts) == batch_ids
    copied = [e for e in w.errors if " was copied to " in e and ".jsonl.1 and truncated: read on there" in e]
    assert len(copied) == len(known), w.errors


def _batch_ids(devices: dict, base) -> list[str]:
    """The finding_ids the nightly batch writes for ``devices``' lines."""
    from pitwatch.lake import Lake
    from pitwatch.lake.parquet import read_table
    from pitwatch.pipelines.batch import run_batch

    write_batch_input(devices, base / "in")
    run_batch([str(base / "in")], Lake.at(base / "lake"))
    return sorted(read_table(Lake.at(base / "lake"), "findings").column("finding_id").to_pylist())


DEALER = "DT-1-BAC-A"


@pytest.mark.slow
def test_copytruncate_to_another_folder_mid_line_is_a_rejected_span_and_a_seq_gap(tmp_path, scenario, start_watch):
    """The copy went to ``olddir`` while the terminal was writing a line (its first 30 bytes seen,
    never its end): that line is one rejected span with its reason, the new content is read from
    its first line (no fragment), and the alerts are the batch's findings without that line (its
    SEQ_GAP among them): no other false finding."""
    feeds, lake, olddir = tmp_path / "feeds", tmp_path / "lake", tmp_path / "old"
    olddir.mkdir()
    k = 26                                            # a bet of the second round
    others = [(d, line) for d, lines in scenario.items() if d != DEALER for line in lines]
    dealer = scenario[DEALER]
    w = start_watch(feeds, "--lake", lake, "--finalize-at-stop")
    append_lines(feeds, others + [(DEALER, x) for x in dealer[:k]])
    with open(feeds / f"{DEALER}.jsonl", "a") as f:  # the terminal is half-way through line k
        f.write(dealer[k][:30])
    seen = f"caught up: {len(others) + k:,} lines"
    w.wait_for(lambda: any(seen in e and "(30 B unread)" in e for e in w.errors), "the half line seen")
    _rotate_copying(feeds, [DEALER], olddir)
    append_lines(feeds, [(DEALER, x) for x in dealer[k + 1:]])   # the terminal goes on, from a new line
    sent = len(others) + len(dealer) - 1 + 1          # the lost span counts as one rejected line
    w.caught_up(sent)
    assert w.stop() == 0
    s = _summary(w)
    _adds_up(s)
    assert s["lines"] == sent and s["rejected"] == 1 + 1     # the scenario's own; the lost span: no fragment
    lost = [e for e in w.errors if f"rejected {feeds / DEALER}.jsonl {LOST}:{k + 1}:" in e]
    assert len(lost) == 1 and "truncated or replaced" in lost[0] and " 30 byte(s) or more" in lost[0], lost
    without_k = {**scenario, DEALER: dealer[:k] + dealer[k + 1:]}
    expected = _batch_ids(without_k, tmp_path / "batch")
    assert sorted(a["finding_id"] for a in w.alerts) == expected
    assert [a["rule_id"] for a in w.alerts].count("SEQ_GAP") == 2      # the scenario's, and line k's
