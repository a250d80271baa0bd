"""``pitwatch report``: the day's compliance report as one self-contained HTML file, and with
``--pdf`` the same printed by headless Chromium (``docs/report.md``)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import click

from pitwatch.cli.common import Incomplete, NotIntact, StrictCommand, UserError, lake_option, user_errors
from pitwatch.cli.incidents import check_out, gaming_day, write_out
from pitwatch.cli.render import visible
from pitwatch.cli.sql import DEFAULT_TIMEOUT, dealers_option, lake_answers
from pitwatch.lake import Lake
from pitwatch.wording import plural

CHROMIUM = "chromium"            # Debian's package and command (apt-get install chromium)
PRINT_TIMEOUT = 180.0            # seconds headless Chromium may take to print the report


def print_pdf(html_path: str, pdf: str, chromium: str) -> None:
    """``html_path`` printed to ``pdf`` by headless ``chromium`` (a profile of its own in a
    temporary folder, removed after), whole or not at all; :class:`Incomplete` when it fails."""
    folder = os.path.dirname(os.path.abspath(pdf))
    with tempfile.TemporaryDirectory(prefix=".report-chromium-") as profile:
        fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".pdf", dir=folder)
        os.close(fd)
        try:
            done = subprocess.run(
                [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 f"--user-data-dir={profile}", "--no-pdf-header-footer", f"--print-to-pdf={tmp}",
                 "file://" + os.path.abspath(html_path)],
                capture_output=True, text=True, timeout=PRINT_TIMEOUT, stdin=subprocess.DEVNULL)
            with open(tmp, "rb") as f:
                head = f.read(5)
            if done.returncode != 0 or head != b"%PDF-":
                last = (done.stderr.strip().splitlines() or ["no message"])[-1]
                raise Incomplete(f"--pdf {pdf}: chromium did not print the report (exit {done.returncode}: {last})")
            os.replace(tmp, pdf)
        except subprocess.TimeoutExpired:
            raise Incomplete(f"--pdf {pdf}: chromium did not print the report in {PRINT_TIMEOUT:g} s") from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)


@click.command(cls=StrictCommand, epilog="""\b
Examples:
  pitwatch report --day 2026-11-28 --lake lake --out report-2026-11-28.html
  pitwatch report --day 2026-11-28 --lake lake --out report.html --pdf report.pdf --force
  pitwatch report --day 2026-11-28 --lake lake --out report.html --since 2026-11-27T07:00:00
  pitwatch report --day 2026-11-28 --lake /data/lake --out /reports/2026-11-28.html \\
      --verify-since /worm/pitwatch/anchor.jsonl --key /etc/pitwatch/anchor.key
""")
@click.option("--day", "day", required=True, metavar="YYYY-MM-DD", help="The gaming day.")
@lake_option
@click.option("--out", required=True, metavar="FILE", help="The HTML file to write (whole or not at all).")
@click.option("--pdf", metavar="FILE", help="Also print the report to this PDF file (headless Chromium).")
@click.option("--force", is_flag=True, help="Replace --out (and --pdf) if they exist.")
@click.option("--since", metavar="RUN|TIME",
              help="'What changed' counts the findings runs after this one (a run id, or a time, UTC) "
                   "changed in days already reported. Default: the gaming day's date, midnight UTC.")
@click.option("--video-pad", type=click.IntRange(0, 3600), default=30, show_default=True, metavar="SECONDS",
              help="Seconds of video before the first and after the last evidence event.")
@click.option("--verify-since", metavar="FILE",
              help="Verify only what came after this anchor file's last entry, as pitwatch verify --since "
                   "(a cost that does not grow with the lake's age); default: the whole lake.")
@click.option("--key", "key_file", metavar="FILE", help="The anchor's signing key (with --verify-since).")
@dealers_option
@user_errors
def report(day, lake, out, pdf, force, since, video_pad, verify_since, key_file, dealers):
    """Write gaming day --day's compliance report as one self-contained HTML
    file: summary tiles (rounds, findings by severity, open against
    reviewed, feed health, what later runs changed), charts (findings by
    rule, table, dealer and hour, a 7-day trend, hands per hour, hold
    against theory), every open critical and major finding with its round
    pictured (the shoe's cards beside the terminal's, the offending one
    marked), the runs that wrote the day and pitwatch verify's result.
    Times are the tables' local time, the zone named.

    The file names nothing outside itself (no script, font or picture from
    elsewhere): it opens on a closed network.  --pdf prints it with Debian's
    chromium, headless.  A day the lake does not hold, a folder that is no
    lake, an --out or --pdf inside the lake: one Error line, exit 2.  A lake
    verify finds not intact: the report is written, saying so, and exit 5.
    """
    from pitwatch.console import report as day_report
    from pitwatch.lake import anchor as anchors
    from pitwatch.lake import delta
    from pitwatch.lake.verify import verify
    from pitwatch.queries.lake_views import connect

    when = gaming_day(day)
    lake = Lake.at(lake)
    if key_file and not verify_since:
        raise UserError("--key goes with --verify-since (it checks the anchor's signatures)")
    key = anchors.read_key(key_file, lake) if key_file else None
    chromium = None
    for flag, path in (("--out", out), ("--pdf", pdf)):
        if path:
            anchors.outside_the_lake(path, lake, flag, "pitwatch writes the lake's files itself; write the report elsewhere")
            check_out(path, force)
    if pdf:
        if os.path.abspath(pdf) == os.path.abspath(out):
            raise UserError(f"--pdf {pdf} is --out: give the PDF a file of its own")
        chromium = shutil.which(CHROMIUM)
        if chromium is None:
            raise UserError(f"--pdf needs Debian's chromium to print (apt-get install chromium): no {CHROMIUM} "
                            "on PATH; the HTML report needs nothing")
    if not any(delta.is_table(lake, name) for name in ("runs", "events", "findings")):
        raise UserError(f"{lake}: not a pitwatch lake (no runs, events or findings table; pitwatch run writes them)")
    with lake_answers():
        con = connect(lake, dealers)
        try:
            if not day_report.has_day(con, when, timeout=DEFAULT_TIMEOUT):
                raise UserError(f"--day {when}: the lake holds no event of this gaming day "
                                f"(pitwatch run --day {when} writes it)")
            verified = verify(lake, key=key, since=verify_since).to_dict()
            built = day_report.build(lake, con, when, verified, since=since, video_pad=video_pad,
                                     timeout=DEFAULT_TIMEOUT)
        finally:
            con.close()
    write_out(day_report.html(built), out)
    click.echo(visible(f"wrote {out}: the compliance report of gaming day {when}"), err=True)
    if pdf:
        assert chromium is not None
        print_pdf(out, pdf, chromium)
        click.echo(visible(f"wrote {pdf}"), err=True)
    if not verified["intact"]:      # the report says so; the exit says so too, as pitwatch verify's would
        raise NotIntact(f"the lake is not intact ({plural(len(verified['problems']), 'problem')}): the report "
                        "shows them; pitwatch verify names them")
