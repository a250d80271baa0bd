"""The ``reviews`` table: what an analyst decided about a finding, append-only and chained.

``pitwatch review`` is its only writer (docs/lake.md, "The reviews table").  One call is one
commit of one data file holding its reviews (a batch ``--from FILE.csv``: all of them, or none),
under the lake's lock (:mod:`pitwatch.lake.lock`), so two reviewers at once never fork the chain:

* **Chained** (:mod:`pitwatch.lake.chain`): each review carries its hash (``review_sha256``,
  over its canonical encoding) and the hash of the review before it (``prev_review_sha256``).
  The review before is the last row of the file the table's last commit added
  (:func:`head`): one commit and one small file, whatever the table's age.
* **Recorded in ``runs``** like every writer's commit: a chained intent before the commit and a
  ``succeeded`` record after it (command ``pitwatch review …``, options ``{"command":
  "review", "reviews": n}``), which names the commit and its file's SHA-256
  (:func:`pitwatch.lake.runs.write_run_record`), so ``pitwatch verify`` checks the file's bytes as
  it checks every table's, and the reviews' chain besides.
* **Its version named on the chain** (:data:`VERSION_KEY`): every review record and every batch
  run's record names the version of ``reviews`` it left (null: no review yet), so a reader and the
  writer know which version must exist (:func:`check_intact`, reading the chain from its head to
  the newest batch run at most): a deleted or rolled-back table is refused, naming ``pitwatch
  verify``, instead of every finding reading ``open`` and new reviews starting a second chain.
* **Never rewritten**: a finding's status is its latest review; a change of mind is a new review.
  "Latest" is by ``reviewed_at`` then ``review_id`` (:data:`RECORDED_ORDER`), which follow the
  chain: a call's ``reviewed_at`` is never before its head's (a clock that stepped back gives the
  head's plus one microsecond), and one call's reviews share it and are numbered in order,
  ``<run id>-000001`` … with :data:`NUMBER_DIGITS` digits, so text order is recording order for the
  largest call there can be (:data:`MOST_PER_CALL`; a bigger one is refused).  :data:`LATEST_SQL`
  is the one definition of "a finding's latest review": the findings view's ``status``, the
  incident records and :func:`latest_of` all run it.

What is refused (:class:`ReviewRefused`, checked before the lock is taken, and again under it, so a
refused review leaves the lake's bytes as they were): a finding not in the lake's ``findings`` at
its latest successful run, a disposition not in :data:`DISPOSITIONS`, a reason not in
``seeds/review_reasons.csv``, an empty reviewer, an amount that is not a finite number, and a
review identical to the finding's latest (same disposition, reviewer, reason, note, video and
amount).

``amount``: the money of the incident, in the table's currency: **positive, what the house lost**
(an overpayment, a payout a patron should not have had); **negative, what it saved** (a wrong
payout caught before it was paid, money recovered); null when none.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import re

import pyarrow as pa

from pitwatch.lake import Lake, chain
from pitwatch.lake import parquet as lake_files
from pitwatch.schemas.arrow import REVIEWS, conform, rows_to_table

TABLE = "reviews"
DISPOSITIONS = ("confirmed", "dismissed", "escalated")
HASH_FIELD = "review_sha256"
PREV_FIELD = "prev_review_sha256"
REASONS_SEED = "review_reasons.csv"
VERSION_KEY = "reviews_version"     # the member of a runs record's options naming the version it left
SAME_REVIEW = ("disposition", "reviewer", "reason", "note", "video", "amount")   # what makes two reviews identical
# The order reviews were recorded in.  review_id is "<run id>-<n>", n zero-padded to NUMBER_DIGITS
# so that text order is number order: with 4 digits, "-10000" sorted before "-9999" and a batch of
# more than 9,999 reviews gave a finding the wrong status.
RECORDED_ORDER = ("reviewed_at", "review_id")
NUMBER_DIGITS = 6
MOST_PER_CALL = 10 ** NUMBER_DIGITS - 1      # reviews one call records at most (cli/review.py: its cap admits fewer)
# a finding's latest review: one row per reviewed finding of the relation ``reviews``
LATEST_SQL = ("SELECT * FROM reviews QUALIFY row_number() OVER (PARTITION BY finding_id ORDER BY "
              + ", ".join(f"{c} DESC" for c in RECORDED_ORDER) + ") = 1")


class ReviewRefused(ValueError):
    """A review pitwatch will not record (the CLI's one ``Error:`` line, exit 2)."""


@dataclasses.dataclass(frozen=True)
class Asked:
    """One review as asked for (a command line, or a row of a batch file: ``where`` names it)."""

    finding_id: str
    disposition: str
    reviewer: str
    reason: str | None = None
    note: str | None = None
    video: str | None = None
    amount: float | None = None
    where: str = ""

    def compared(self) -> tuple:
        return tuple(getattr(self, k) for k in SAME_REVIEW)


# an amount as people write it in a report: an optional sign, ASCII digits, an optional fraction.
# float() alone also takes '١٢' (Arabic-Indic digits), '1_000', '1e3', 'nan' and 'inf'.
_PLAIN_DECIMAL = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?\Z", re.A)


def amount_of(text: str | None, where: str) -> float | None:
    """A review's amount as typed (``pitwatch review --amount``, a batch row's, the console's form):
    a plain ASCII decimal (``-25``, ``12.50``), None for none, else :class:`ReviewRefused` naming
    ``where`` (``--``, ``line 3: ``)."""
    if text is None or text.strip() == "":
        return None
    if not _PLAIN_DECIMAL.match(text.strip()):
        raise ReviewRefused(f"{where}amount {text!r} is not a number (write it with ASCII digits: "
                            "an optional sign, digits, an optional fraction, e.g. -25 or 12.50)")
    value = float(text)
    if not math.isfinite(value):
        raise ReviewRefused(f"{where}amount {text!r} is not a finite number")
    return value


def reason_codes() -> list[str]:
    """The reason codes shipped in ``seeds/review_reasons.csv`` (their titles and error types are
    read by the queries, from the ``seeds_review_reasons`` table)."""
    from pitwatch.seeds import read_csv

    return [r["code"] for r in read_csv(REASONS_SEED)]


def _refuse(asked: Asked, message: str) -> ReviewRefused:
    return ReviewRefused(f"{asked.where}: {message}" if asked.where else message)


def _check_fields(asked: Asked, codes: list[str]) -> None:
    """Refuse a review whose own values are wrong (before the lake is read)."""
    if not asked.finding_id:
        raise _refuse(asked, "no finding id")
    if asked.disposition not in DISPOSITIONS:
        raise _refuse(asked, f"disposition {asked.disposition!r} is not one of {', '.join(DISPOSITIONS)}")
    if not asked.reviewer or not asked.reviewer.strip():
        raise _refuse(asked, "the reviewer (--by) is empty: a review names who made it")
    if asked.reason is not None and asked.reason not in codes:
        raise _refuse(asked, f"reason {asked.reason!r} is not a reason code ({', '.join(codes)}; "
                             "seeds/review_reasons.csv)")
    if asked.amount is not None and (isinstance(asked.amount, bool) or not math.isfinite(asked.amount)):
        raise _refuse(asked, f"amount {asked.amount!r} is not a finite number")


def findings_of(lake: Lake, finding_ids) -> dict[str, dict]:
    """``finding_id`` -> its rule, table and gaming day, for those of ``finding_ids`` the lake's
    ``findings`` hold at the latest successful run (the version analysts read)."""
    import pyarrow.dataset as ds

    wanted = sorted(set(finding_ids))
    table = lake.pinned("findings")
    if not table.exists or not wanted:
        return {}
    rows = table.dataset().to_table(columns=["finding_id", "rule_id", "table_id", "gaming_day"],
                                    filter=ds.field("finding_id").isin(wanted)).to_pylist()
    return {r["finding_id"]: r for r in rows}


def current_version(lake: Lake) -> int | None:
    """The ``reviews`` table's latest version (None: no review yet): what a record names."""
    from pitwatch.lake import delta

    return delta.current_version(lake, TABLE) if delta.is_table(lake, TABLE) else None


def check_intact(lake: Lake) -> None:
    """Refuse (:class:`pitwatch.lake.parquet.LakeError`) a lake whose records name a version of
    ``reviews`` the table no longer has (deleted, or its newest commits gone): read from the
    chain's head to the newest batch run at most (:func:`pitwatch.lake.runs.newest_naming`)."""
    from pitwatch.lake import runs
    from pitwatch.lake.parquet import LakeError

    named, run_id = runs.newest_naming(lake, VERSION_KEY)
    if type(named) is not int:
        return                         # no review yet, or a lake from before the key
    have = current_version(lake)
    if have is None or have < named:
        state = "gone" if have is None else f"at version {have}"
        raise LakeError(f"the lake's reviews table is {state}, but run {run_id}'s record names its version "
                        f"{named}: the lake is not intact (pitwatch verify --lake {lake})")


def dataset(lake: Lake):
    """The ``reviews`` table at its latest version (every review ever recorded; never pinned to a
    run): the one reader of the table, for the analysts' connection and for :func:`read_all`."""
    from pitwatch.lake import delta

    version = delta.current_version(lake, TABLE)
    return delta.dataset(lake, TABLE, delta.files_at(lake, TABLE, version) if version is not None else [],
                         REVIEWS, partitioned=False)


def read_all(lake: Lake, finding_ids=None) -> pa.Table:
    """The reviews (of ``finding_ids`` only, when given: a filter pushed into the scan, so only
    the row groups that may hold them are read), in the REVIEWS columns, in the order they were
    recorded (:data:`RECORDED_ORDER`)."""
    import pyarrow.dataset as ds

    where = None if finding_ids is None else ds.field("finding_id").isin(sorted(set(finding_ids)))
    table = conform(dataset(lake).to_table(filter=where), REVIEWS)
    return table.sort_by([(c, "ascending") for c in RECORDED_ORDER])


def latest_of(lake: Lake, finding_ids) -> dict[str, dict]:
    """The latest review (:data:`LATEST_SQL`) of each of ``finding_ids`` that has one; reads only
    their reviews."""
    import duckdb

    wanted = sorted(set(finding_ids))
    if not wanted:
        return {}
    reviews = read_all(lake, wanted)
    if reviews.num_rows == 0:
        return {}
    con = duckdb.connect(":memory:")
    try:
        con.register("reviews", reviews)
        answer = con.sql(LATEST_SQL).to_arrow_table()
    finally:
        con.close()
    return {r["finding_id"]: r for r in conform(answer, REVIEWS).to_pylist()}


def check(lake: Lake, asked: list[Asked]) -> dict[str, dict]:
    """Refuse (:class:`ReviewRefused`) what must not be recorded, the first problem in the order
    asked; the findings reviewed (:func:`findings_of`).  Reads only."""
    import pyarrow.fs as pafs

    from pitwatch.lake import delta

    if not asked:
        raise ReviewRefused("no review to record")
    if len(asked) > MOST_PER_CALL:
        raise ReviewRefused(f"{len(asked)} reviews in one call: at most {MOST_PER_CALL:,} (split the file)")
    if lake.fs.get_file_info(lake.root).type != pafs.FileType.Directory:
        raise ReviewRefused(f"no lake at {lake} (not a folder)")
    if not delta.is_table(lake, "findings") or not delta.is_table(lake, "runs"):
        # (a lake of tables committed by hand has no runs: its first record would pin readers to no run)
        raise ReviewRefused(f"{lake} has no findings a pitwatch run wrote: not a pitwatch lake, or no run "
                            "has written it yet")
    check_intact(lake)           # a deleted reviews table: refused, not a second chain begun
    codes = reason_codes()
    for a in asked:
        _check_fields(a, codes)
    found = findings_of(lake, [a.finding_id for a in asked])
    for a in asked:
        if a.finding_id not in found:
            raise _refuse(a, f"finding {a.finding_id!r} is not in the lake's findings (at its latest successful run)")
    latest = {fid: tuple(r[k] for k in SAME_REVIEW) for fid, r in latest_of(lake, found).items()}
    for a in asked:
        if latest.get(a.finding_id) == a.compared():
            raise _refuse(a, f"finding {a.finding_id} already has this review as its latest "
                             f"({a.disposition} by {a.reviewer}): nothing new to record")
        latest[a.finding_id] = a.compared()
    return found


def clock() -> _dt.datetime:
    """The time a review is recorded at (UTC): the system clock, which may step back (NTP)."""
    return _dt.datetime.now(_dt.timezone.utc)


def head(lake: Lake) -> dict | None:
    """The chain's last review: the last row of the file the table's last commit added (None: no
    review yet).  One commit and one file read, however many reviews the table holds."""
    from pitwatch.lake import delta, delta_log

    versions = delta_log.history_versions(lake, TABLE) if delta.is_table(lake, TABLE) else []
    for version in reversed(versions):
        _data, actions = delta.read_commit(lake, TABLE, version)
        paths = delta.added_paths(actions)
        if not paths:
            continue            # a commit that added no file (none is written today): the one before
        rows = chain.parquet_rows(chain.read_whole(lake.fs, lake.path(TABLE, paths[-1])))
        if rows:
            return rows[-1]
    return None


def record(lake: Lake, asked: list[Asked], command: str, holder_update=None) -> list[dict]:
    """Record ``asked`` as one commit of ``reviews`` and a chained ``runs`` record; the rows written.
    The caller holds the lake's lock.  Checked again here (:func:`check`): under the lock, against
    the reviews another reviewer recorded since."""
    from pitwatch.lake import delta, runs

    found = check(lake, asked)
    previous = head(lake)
    now = clock()
    if previous is not None and previous["reviewed_at"] is not None and now <= previous["reviewed_at"]:
        # the clock stepped back (or stood still): reviewed_at still orders the reviews as the chain does
        now = previous["reviewed_at"] + _dt.timedelta(microseconds=1)
    run_id = runs.new_run_id(now)
    if holder_update is not None:
        holder_update(run_id=run_id)
    rows = []
    for i, a in enumerate(asked, 1):
        f = found[a.finding_id]
        row = {"review_id": f"{run_id}-{i:0{NUMBER_DIGITS}d}", "finding_id": a.finding_id, "disposition": a.disposition,
               "reason": a.reason, "reviewer": a.reviewer, "note": a.note, "video": a.video,
               "amount": None if a.amount is None else float(a.amount), "reviewed_at": now,
               "rule_id": f["rule_id"], "table_id": f["table_id"], "gaming_day": f["gaming_day"]}
        row = rows_to_table([row], REVIEWS).to_pylist()[0]       # the values as a reader reads them back
        row = chain.link(previous, row, HASH_FIELD, PREV_FIELD)
        rows.append(row)
        previous = row
    meta = {"run_id": run_id, "command": command, "started": now.isoformat(), "versions": runs.versions(),
            "options": json.dumps({"command": "review", "reviews": len(rows)}, sort_keys=True)}
    written = lake_files.write_data_file(lake, TABLE, None, f"review-{run_id}.parquet", rows_to_table(rows, REVIEWS))
    fence = delta.fence(lake, TABLE)
    kwargs = dict(run_id=run_id, fence_at_start=fence, schema=REVIEWS, partitioned=False)
    runs.write_intent_record(lake, meta, delta.intended_commits(lake, TABLE, [written], None, **kwargs))
    delta.commit_replays(lake, TABLE, [written], None, **kwargs)
    meta["options"] = json.dumps({"command": "review", "reviews": len(rows), VERSION_KEY: current_version(lake)},
                                 sort_keys=True)
    runs.write_run_record(lake, runs.run_record(meta, "succeeded", ended=_dt.datetime.now(_dt.timezone.utc)),
                          written=[written])
    return rows


def chain_problems(lake: Lake, since: int | None = None) -> list[tuple[str, str, str]]:
    """Every broken link of the reviews' chain at the table's latest version, as (kind, what, why)
    for ``pitwatch verify``: the reviews in commit order (the files in the order their commits added
    them, the rows in file order).  ``since`` (``verify --since``): only the reviews of commits from
    that version on, the first linked to the last review of the commit before (taken as verified):
    what is new, not seven years of reviews."""
    from pitwatch.lake import delta, delta_log

    if not delta.is_table(lake, TABLE):
        return []
    versions = delta_log.history_versions(lake, TABLE)
    if not versions:
        return []
    current = set(delta.files_at(lake, TABLE, versions[-1]))

    def rows_of(version: int) -> list[tuple[str, dict]]:
        _data, actions = delta.read_commit(lake, TABLE, version)
        out: list[tuple[str, dict]] = []
        for path in delta.added_paths(actions):
            full = lake.path(TABLE, path)
            if full not in current:
                continue
            try:
                rows = chain.parquet_rows(chain.read_whole(lake.fs, full))
            except (OSError, pa.ArrowException):
                continue                   # gone or unreadable: verify's file check names it
            out.extend((f"{TABLE}/{path}", r) for r in rows)
        return out

    records: list[tuple[str, dict]] = []
    if since is not None:
        before = [v for v in versions if v < since]
        for version in reversed(before):          # the last review before: the link the first new one names
            found = rows_of(version)
            if found:
                records.append(found[-1])
                break
    first = len(records)
    for version in versions:
        if since is None or version >= since:
            records.extend(rows_of(version))
    broken = chain.chain_problems([r for _p, r in records], HASH_FIELD, PREV_FIELD,
                                  name=lambda i, r: f"review {r.get('review_id')} of finding {r.get('finding_id')} "
                                                    f"({records[i][0]})")
    return [(kind, records[i][0], why) for i, kind, why in broken if i >= first]
