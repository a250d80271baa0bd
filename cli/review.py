"""``pitwatch review``: record an analyst's decision about a finding in the lake (:mod:`pitwatch.lake.reviews`)."""
from __future__ import annotations

import csv
import io
import logging

import click

from pitwatch.cli.common import COMMAND_META, StrictCommand, UserError, setting_option, user_errors
from pitwatch.cli.locking import lake_lock, lock_timeout_option
from pitwatch.cli.render import visible
from pitwatch.inputs.files import read_operator_csv
from pitwatch.lake import Lake

log = logging.getLogger("pitwatch")

BATCH_COLUMNS = ("finding_id", "disposition", "by", "reason", "note", "video", "amount")
# a reviews file is a few hundred lines; a bigger one is a mistake.  Its shortest row is 18 bytes
# ("x,confirmed,y,,,,\n"), so 16 MiB holds at most 932,067 reviews: fewer than lake/reviews.py
# MOST_PER_CALL, the most its ids number in order (tests/pipelines/test_reviews.py checks it).
MAX_BATCH_BYTES = 16 << 20


def _amount(text: str | None, where: str) -> float | None:
    """``--amount`` (or a batch row's): :func:`pitwatch.lake.reviews.amount_of`, else one ``Error:`` line."""
    from pitwatch.lake.reviews import ReviewRefused, amount_of

    try:
        return amount_of(text, where)
    except ReviewRefused as exc:
        raise UserError(str(exc)) from None


def _blank_is_none(text: str | None) -> str | None:
    return None if text is None or text == "" else text


def read_batch(path: str) -> list:
    """The reviews of a batch file (``BATCH_COLUMNS``, a header row, UTF-8), each naming its line;
    a file that is not one is refused whole (:class:`UserError` naming the line)."""
    from pitwatch.lake.reviews import Asked

    data = read_operator_csv(path, MAX_BATCH_BYTES, "--from")     # never blocks on a FIFO or a device
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise UserError(f"--from {path} line {line}: not UTF-8 text") from None
    if "\x00" in text:
        raise UserError(f"--from {path} line {text[:text.index(chr(0))].count(chr(10)) + 1}: a NUL byte")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise UserError(f"--from {path}: empty; its header is {','.join(BATCH_COLUMNS)}")
        if [h.strip() for h in header] != list(BATCH_COLUMNS):
            raise UserError(f"--from {path} line 1: the header is {','.join(header)!r}, not "
                            f"{','.join(BATCH_COLUMNS)}")
        out = []
        for row in reader:
            where = f"--from {path} line {reader.line_num}"
            if not row:
                continue
            if len(row) != len(BATCH_COLUMNS):
                raise UserError(f"{where}: {len(row)} fields, the header has {len(BATCH_COLUMNS)}")
            values = dict(zip(BATCH_COLUMNS, row))
            out.append(Asked(values["finding_id"], values["disposition"], values["by"],
                             _blank_is_none(values["reason"]), _blank_is_none(values["note"]),
                             _blank_is_none(values["video"]), _amount(values["amount"], f"{where}: "), where))
    except csv.Error as exc:
        raise UserError(f"--from {path} line {reader.line_num}: {exc}") from None
    if not out:
        raise UserError(f"--from {path}: no review in it (only its header)")
    return out


@click.command(cls=StrictCommand, epilog="""\b
Examples:
  pitwatch review 33089a2b5d07969adf1bc8c34ae5b040 --disposition confirmed --by "M. Ortiz" \\
      --reason DEALER_ERROR --note "burn skipped, seen on camera 14" --video "CAM-14 21:03-21:06" --lake lake
  pitwatch review 33089a2b5d07969adf1bc8c34ae5b040 --disposition dismissed --by "M. Ortiz" \\
      --reason DEVICE_FAULT --lake lake
  pitwatch review --from reviews.csv --lake lake
  pitwatch review --from reviews.csv --lake s3://casino-lake/floor
  (reviews.csv: finding_id,disposition,by,reason,note,video,amount)
""")
@click.argument("finding_id", required=False)
@click.option("--disposition", type=str, metavar="confirmed|dismissed|escalated",
              help="What the review decided: confirmed (the procedure was broken), dismissed, escalated.")
@click.option("--by", "by", metavar="NAME", help="Who reviewed it (required).")
@click.option("--reason", metavar="CODE", help="A reason code of seeds/review_reasons.csv (DEALER_ERROR, PATRON, …).")
@click.option("--note", metavar="TEXT", help="What the reviewer saw.")
@click.option("--video", metavar="REF", help="The video reference (camera, times).")
@click.option("--amount", metavar="N", help="Money of the incident: positive what the house lost, negative what it saved.")
@click.option("--from", "from_file", metavar="FILE.csv",
              help="Record every review of a CSV file (finding_id,disposition,by,reason,note,video,amount) "
                   "as one commit: all of them, or none.")
@setting_option("lake", required=True)
@lock_timeout_option
@click.pass_context
@user_errors
def review(ctx, finding_id, disposition, by, reason, note, video, amount, from_file, lake, lock_timeout):
    """Record a review of a finding in the lake's reviews table: confirmed,
    dismissed or escalated, by whom, why, with a note, the video reference and
    the money involved.  The latest review of a finding is its status (the
    findings view's status column; open without one); history is never
    rewritten: to change a decision, review the finding again.

    A finding not in the lake (at its latest successful run), an unknown
    disposition or reason, an empty --by, a non-finite amount, or a review
    identical to the finding's latest is refused (exit 2), and the lake is not
    changed.  With --from, one bad line refuses the whole file, naming it.

    Holds the lake's lock (waits for a run, up to --lock-timeout, then exit 4);
    each call is one commit, chained and recorded in runs: pitwatch verify
    checks it.  Prints one line per review: the finding and its new status.
    """
    from pitwatch.lake.lock import holder_update
    from pitwatch.lake.reviews import Asked, check, record

    at = Lake.at(lake)
    single = (disposition, by, reason, note, video, amount)
    if from_file is not None:
        if finding_id is not None or any(v is not None for v in single):
            raise UserError("--from FILE.csv takes every review from the file: give no FINDING_ID, "
                            "--disposition, --by, --reason, --note, --video or --amount with it")
        asked = read_batch(from_file)
    else:
        if finding_id is None:
            raise UserError("give a FINDING_ID (or --from FILE.csv)")
        if disposition is None:
            raise UserError("--disposition is required: confirmed, dismissed or escalated")
        if by is None:
            raise UserError("--by NAME is required: a review names who made it")
        asked = [Asked(finding_id, disposition, by, reason, note, video, _amount(amount, "--"))]
    check(at, asked)             # refused before the lock: a refused review leaves the lake's bytes as they were
    command = ctx.meta.get(COMMAND_META, "pitwatch review")
    with lake_lock(at, lock_timeout, command, log):
        rows = record(at, asked, command, holder_update=lambda **kw: holder_update(at, **kw))
    for r in rows:      # the reviewer's name (and a batch's finding id) as typed: its control characters escaped
        click.echo(visible(f"{r['finding_id']}: {r['disposition']} (review {r['review_id']}, by {r['reviewer']})"))
