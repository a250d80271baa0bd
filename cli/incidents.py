"""``pitwatch incidents``: the incident records of a gaming day (its confirmed and escalated
findings) as CSV or JSON for a casino's incident system (``docs/incidents.md``)."""
from __future__ import annotations

import datetime as _dt
import os
import tempfile

import click

from pitwatch.cli.common import StrictCommand, UserError, lake_option, user_errors
from pitwatch.cli.render import render, visible
from pitwatch.cli.sql import DEFAULT_TIMEOUT, dealers_option, lake_answers
from pitwatch.lake import Lake
from pitwatch.wording import plural


def gaming_day(text: str) -> _dt.date:
    """``--day``: a date written YYYY-MM-DD (the query catalogue's check), or one ``Error:`` line."""
    from pitwatch.queries.catalog import date_value

    try:
        return date_value(text)
    except ValueError:
        raise UserError(f"--day {text!r}: not a gaming day (write it YYYY-MM-DD, e.g. 2026-11-28)") from None


def csv_text(records: list[dict]) -> str:
    """The records as CSV with a header (:data:`pitwatch.queries.incidents.FIELDS`): the evidence
    list joined with ``; ``; a cell that begins like a formula is written after a ``'`` and control
    characters are shown escaped (:func:`pitwatch.cli.render.render`)."""
    from pitwatch.queries.incidents import FIELDS

    rows = [[("; ".join(r[k]) if k == "evidence" else r[k]) for k in FIELDS] for r in records]
    return render(list(FIELDS), rows, "csv")


def json_text(records: list[dict]) -> str:
    """The records as one JSON array (``[]`` for none), every text exactly as the lake holds it."""
    import orjson

    try:
        return orjson.dumps(records, option=orjson.OPT_INDENT_2).decode() + "\n"
    except orjson.JSONEncodeError:     # a lone surrogate: the standard library escapes it, still valid JSON
        import json

        return json.dumps(records, indent=2, ensure_ascii=True) + "\n"


def check_out(out: str, force: bool) -> None:
    """``--out`` may be written: refused (one ``Error:`` line) before the lake is read."""
    if os.path.lexists(out) and not force:
        raise UserError(f"--out {out} exists; add --force to replace it")
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise UserError(f"--out {out}: no folder {folder}")


def write_out(text: str, out: str) -> None:
    """``text`` into ``out``, whole or not at all (a temporary file beside it, renamed)."""
    folder = os.path.dirname(os.path.abspath(out))
    fd, tmp = tempfile.mkstemp(prefix=".incidents-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@click.command(cls=StrictCommand, epilog="""\b
Examples:
  pitwatch incidents --day 2026-11-28 --lake lake
  pitwatch incidents --day 2026-11-28 --lake lake --format json --out incidents-2026-11-28.json
  pitwatch incidents --day 2026-11-28 --lake lake --video-pad 60 --out itrak-import.csv --force
""")
@click.option("--day", "day", required=True, metavar="YYYY-MM-DD", help="The gaming day.")
@lake_option
@click.option("--format", "fmt", type=click.Choice(("csv", "json")), default="csv", show_default=True,
              help="CSV with a header row, or one JSON array of records.")
@click.option("--out", metavar="FILE", help="Write the records to FILE (whole or not at all) instead of stdout.")
@click.option("--force", is_flag=True, help="Replace --out FILE if it exists.")
@click.option("--video-pad", type=click.IntRange(0, 3600), default=30, show_default=True, metavar="SECONDS",
              help="Seconds of video before the first and after the last evidence event.")
@dealers_option
@user_errors
def incidents(day, lake, fmt, out, force, video_pad, dealers):
    """Write one incident record per finding of gaming day --day whose
    status is confirmed or escalated (its latest review), in the shape an
    incident system imports: a stable incident number (PW-YYYYMMDD-<12 hex of
    the finding id>), type, severity, table, game, the table's local date and
    time (its display zone, named: the lake's time zone, or the table's
    [display.tables] zone of pitwatch.toml), dealer, seat, procedure section, a description in sentences, the
    evidence (file:line), the video window to pull, and the review
    (disposition, reviewer, reason and its error type, note, video, amount).

    A day with no incident writes the CSV header alone, or [] in JSON, and
    exits 0.  In CSV a cell beginning with =, +, - or @ is written after a '
    so a spreadsheet shows it as text; JSON keeps every text exactly.
    docs/incidents.md maps every field to an iTrak-style incident file.
    An --out inside the lake is refused (exit 2).
    """
    from pitwatch.lake import delta
    from pitwatch.lake.anchor import outside_the_lake
    from pitwatch.lake.settings import display_zones
    from pitwatch.queries.incidents import day_incidents, same_numbers, statements
    from pitwatch.queries.lake_views import connect, referenced_tables

    when = gaming_day(day)
    lake = Lake.at(lake)
    if out:
        outside_the_lake(out, lake, "--out", "pitwatch writes the lake's files itself; write the records elsewhere")
        check_out(out, force)
    with lake_answers():
        con = connect(lake, dealers, tables=referenced_tables(*statements()))
        try:
            if not any(delta.is_table(lake, name) for name in ("runs", "events", "findings")):
                raise UserError(f"{lake}: not a pitwatch lake (no runs, events or findings table; "
                                "pitwatch run writes them)")
            lake_zone, zones = display_zones(lake)
            records = day_incidents(con, when, video_pad=video_pad, timeout=DEFAULT_TIMEOUT,
                                    lake_zone=lake_zone, zones=zones)
        finally:
            con.close()
    for number, ids in same_numbers(records).items():      # 48 bits alike: said, never hidden (docs/incidents.md)
        click.echo(visible(f"warning: incident number {number} is shared by findings {', '.join(ids)}; "
                           "tell them apart by their finding_id"), err=True)
    text = json_text(records) if fmt == "json" else csv_text(records)
    if out:
        write_out(text, out)
        click.echo(visible(f"wrote {out}: {plural(len(records), 'incident')} of gaming day {when}"), err=True)
    else:
        click.echo(text, nl=False, color=True)
