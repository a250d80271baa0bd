"""``pitwatch run --day D --inbox DIR``: the form a scheduler calls every night.

Inbox layout (what the devices' uploaders write)::

    INBOX/2026-11-28/DT-BAC01.jsonl          one folder per gaming day,
    INBOX/2026-11-28/SHOE-4411.jsonl.gz      any files below it (.jsonl, .jsonl.gz, .parquet),
    INBOX/2026-11-28/shufflers/SHF-88.jsonl  e.g. one per device, sub-folders allowed

A day's replay reads that day's folder and starts from the state the
previous replayed day left in the lake (:mod:`pitwatch.lake.state`).  Each
night, the folders of the last ``lookback_days`` days are compared with what
their replay read (paths, sizes, modification times, recorded in the day's
manifest): a folder that changed — a late upload — or a day never replayed
makes pitwatch replay from that day forward, day by day, so that the
corrected findings replace the old ones (each day's rows live in their own
``replay-<day>.parquet`` files, replaced as a whole) and nothing is counted
twice.  Rounds and packs that cross the cutoff belong to the gaming day they
started in; a finding carries the day of the event that completed it.

A night with nothing to read is an error, not a quiet success: no folder
for the night's day, or one holding only files pitwatch does not read,
stops the run (exit 2) naming them, unless ``--allow-empty-day`` (the casino
was closed).  Files skipped (checksums, unfinished ``.partial`` uploads,
hidden files, other suffixes) are named on stderr and in the run record's
``options.inbox_skipped``; ``--strict-inbox`` makes any of them an error.
So are files that are not regular files (a FIFO, a device, a socket, a link
to one or to nothing): skipped with the reason, also listed in
``options.inputs_refused`` and the run's summary, and the night's other
files are read (docs/inputs.md, "Files that are not files").
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import re

from pitwatch.inputs.files import INPUT_SUFFIXES, InputError
from pitwatch.inputs.stored import refusal, remote_store
from pitwatch.lake import Lake, state
from pitwatch.lake import settings as lake_settings
from pitwatch.pipelines.batch import RunSummary, run_batch
from pitwatch.wording import plural

_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclasses.dataclass
class NightlyPlan:
    days: list[str]              # to replay, ascending
    prior: str | None            # state the first of them starts from
    reasons: dict[str, str]      # day -> why it is replayed


def parse_day(text: str) -> str:
    try:
        return _dt.date.fromisoformat(text).isoformat()
    except ValueError:
        raise InputError(f"--day must be a date YYYY-MM-DD, got {text!r}") from None


def remote(inbox: str) -> bool:
    """The inbox is on an object store (``s3://bucket/inbox``): listed through pyarrow's file
    system, its files read by Beam's (:func:`pitwatch.inputs.stored.remote_store`)."""
    return "://" in inbox


def inbox_path(inbox: str, relative: str) -> str:
    """A file of the inbox by its path relative to it (``2026-11-28/DT-BAC01.jsonl``)."""
    return f"{inbox.rstrip('/')}/{relative}" if remote(inbox) else os.path.join(inbox, relative)


def is_folder(inbox: str, day: str | None = None) -> bool:
    """The inbox (or its folder of ``day``) exists as a folder; on an object store, a prefix
    with at least one object below it (a store has no empty folder)."""
    if not remote(inbox):
        return os.path.isdir(os.path.join(inbox, day) if day else inbox)
    import pyarrow.fs as pafs

    fs, root = remote_store(inbox)
    return fs.get_file_info(f"{root}/{day}" if day else root).type == pafs.FileType.Directory


def inbox_days(inbox: str) -> list[str]:
    if not is_folder(inbox):
        raise InputError(f"inbox {inbox} is not a folder" + (" (nothing below it on the store)" if remote(inbox) else ""))
    if remote(inbox):
        import pyarrow.fs as pafs

        fs, root = remote_store(inbox)
        return sorted(i.base_name for i in fs.get_file_info(pafs.FileSelector(root))
                      if i.type == pafs.FileType.Directory and _DAY.match(i.base_name))
    return sorted(d for d in os.listdir(inbox) if _DAY.match(d) and os.path.isdir(os.path.join(inbox, d)))


def _remote_files(inbox: str, day: str) -> list:
    """Every object below the day's folder of an inbox on an object store (pyarrow ``FileInfo``:
    path, size, modification time), and the inbox's own path on the store."""
    import pyarrow.fs as pafs

    fs, root = remote_store(inbox)
    infos = fs.get_file_info(pafs.FileSelector(f"{root}/{day}", recursive=True, allow_not_found=True))
    return [(i, i.path[len(root) + 1:]) for i in infos if i.type == pafs.FileType.File]


def day_listing(inbox: str, day: str) -> list[dict]:
    """The input files of one day's folder: relative path, size, modification time (ns; an
    object's last-modified time on a store)."""
    if remote(inbox):
        return sorted(({"path": rel, "bytes": i.size, "mtime_ns": i.mtime_ns} for i, rel in _remote_files(inbox, day)
                       if skip_reason(rel.rsplit("/", 1)[-1]) is None), key=lambda f: f["path"])
    folder = os.path.join(inbox, day)
    out: list[dict] = []
    if not os.path.isdir(folder):
        return out
    for root, _dirs, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            if file_skip_reason(path) is None:
                st = os.stat(path)
                out.append({"path": os.path.relpath(path, inbox), "bytes": st.st_size, "mtime_ns": st.st_mtime_ns})
    return sorted(out, key=lambda f: f["path"])


def file_skip_reason(path: str) -> str | None:
    """Why a file of a day's folder is not read (None: it is read): its name (:func:`skip_reason`),
    or what it is: only a regular file (or a link to one) is read, a FIFO, a device, a socket or a
    link to one or to nothing is refused (:func:`pitwatch.inputs.stored.refusal`)."""
    return skip_reason(os.path.basename(path)) or refusal(path)


_CHECKSUMS = (".sha256", ".sha512", ".sha1", ".md5", ".sum", ".sig", ".asc")
_UNFINISHED = (".partial", ".part", ".tmp", ".crdownload", ".filepart")


def skip_reason(name: str) -> str | None:
    """Why a file of a day's folder is not read (None: it is read).

    Read: ``.jsonl``, ``.jsonl.gz``, ``.parquet``, exactly so spelled.  The
    suffix is case-sensitive, as it is for a one-off run: ``SHOE-5022.JSONL``
    is skipped and named, not guessed at.
    """
    low = name.lower()
    if name.startswith("."):
        return "hidden file"
    if low.endswith(_UNFINISHED):
        return "upload not finished"
    if low.endswith(_CHECKSUMS) or low in ("sha256sums", "md5sums", "checksums"):
        return "checksum file"
    if name.endswith(INPUT_SUFFIXES):
        return None
    if low.endswith(INPUT_SUFFIXES):
        return "suffix not in lower case (pitwatch reads .jsonl, .jsonl.gz, .parquet)"
    return "not .jsonl, .jsonl.gz or .parquet"


def day_skipped(inbox: str, day: str) -> list[dict]:
    """The files of one day's folder that are not read, each with why: ``[{"path", "reason"}]``
    (on an object store, by name only: every object is a regular file)."""
    if remote(inbox):
        return sorted(({"path": rel, "reason": reason} for _i, rel in _remote_files(inbox, day)
                       if (reason := skip_reason(rel.rsplit("/", 1)[-1])) is not None), key=lambda f: f["path"])
    folder = os.path.join(inbox, day)
    out = []
    for root, _dirs, names in os.walk(folder):
        for name in names:
            reason = file_skip_reason(os.path.join(root, name))
            if reason is not None:
                out.append({"path": os.path.relpath(os.path.join(root, name), inbox), "reason": reason})
    return sorted(out, key=lambda f: f["path"])


def check_inbox(inbox: str, day: str, days: list[str], allow_empty_day: bool = False,
                strict_inbox: bool = False) -> dict[str, list[dict]]:
    """Refuse a night with nothing to read; return each replayed day's skipped files.

    The night's ``day`` must have a folder with at least one file pitwatch
    reads, unless ``allow_empty_day`` (a day the casino was closed): a
    missing upload must not pass for a quiet night.  With ``strict_inbox``
    any skipped file of a replayed day is an error too.
    """
    folder = inbox_path(inbox, day)
    skipped = {d: day_skipped(inbox, d) for d in days}
    if not allow_empty_day:
        if not is_folder(inbox, day):
            raise InputError(f"no inbox folder for gaming day {day}: {folder} does not exist; "
                             "for a day the casino was closed, run with --allow-empty-day")
        if not day_listing(inbox, day):
            named = _named(skipped[day])
            raise InputError(f"inbox folder {folder} holds no file pitwatch reads (.jsonl, .jsonl.gz, .parquet)"
                             + (f": skipped {named}" if named else ": it is empty")
                             + "; for a day the casino was closed, run with --allow-empty-day")
    if strict_inbox:
        bad = [f for d in days for f in skipped[d]]
        if bad:
            raise InputError(f"--strict-inbox: the inbox holds {plural(len(bad), 'file')} pitwatch does not read: "
                             f"{_named(bad)}")
    return skipped


def _named(files: list[dict], most: int = 10) -> str:
    shown = ", ".join(f"{f['path']} ({f['reason']})" for f in files[:most])
    return shown + (f" and {len(files) - most} more" if len(files) > most else "")


def check_day_not_older(day: str, rebuild_from: str | None, replayed: list[str]) -> None:
    """Refuse a night older than the lake's last night (exit 2), unless ``--rebuild-from`` names it.

    A night's run replays every replayed day from the first one it changes up to the lake's last:
    ``--day`` of an old day given by mistake (a scheduler's catch-up, a typo) would replay a week
    of nights without a word.  Late files of earlier days need no old ``--day``: the next night
    reads every folder of its look-back that changed.  ``--rebuild-from DAY`` naming that very day
    says the replay from it is meant.
    """
    last = replayed[-1] if replayed else None
    if last is None or day >= last or rebuild_from == day:
        return
    later = sum(1 for d in replayed if d > day)
    raise InputError(
        f"--day {day} is older than the lake's last night {last}: it would replay the {plural(later, 'night')} "
        f"after it as well; a night's run reads late files of earlier days by itself (run --day {last} or a "
        f"later day), or give --rebuild-from {day} to replay from {day} on")


def plan(day: str, inbox: str, lake_path: Lake, lookback_days: int = 7, rebuild_from: str | None = None) -> NightlyPlan:
    """The inbox folders the night reads: the night's own, every folder of the last
    ``lookback_days`` days that changed since a run read it (or was never read), and, with
    ``rebuild_from``, every folder from that day on (up to the night's day, or to the lake's last
    night when the night is older: a rebuild drops the lake's events from ``rebuild_from`` on, so
    every later folder must be read again).  Which days are then replayed is the run's
    (:mod:`pitwatch.pipelines.lake_run`): from the first day the files change onward."""
    day_date = _dt.date.fromisoformat(day)
    oldest = (day_date - _dt.timedelta(days=lookback_days)).isoformat()
    folders = inbox_days(inbox)
    window = [d for d in folders if oldest <= d <= day]
    manifests = state.manifests(lake_path)
    through = max([day, *manifests]) if rebuild_from is not None else day
    reasons: dict[str, str] = {}
    for d in window:
        if d == day:
            continue
        manifest = manifests.get(d)
        if manifest is None:
            reasons[d] = "never replayed"
        elif manifest.get("inbox") != day_listing(inbox, d):
            reasons[d] = "its inbox folder changed (late or replaced files)"
    if rebuild_from is not None:
        for d in folders:
            if rebuild_from <= d <= through:
                reasons.setdefault(d, "--rebuild-from")
    reasons[day] = "the night's day"
    days = sorted(reasons)
    earlier = [d for d in manifests if d < min(days)]
    prior = earlier[-1] if earlier else None
    if prior is not None:
        state.check_versions(prior, manifests[prior])   # fails clearly if its format cannot be read
    return NightlyPlan(days, prior, reasons)


def run_nightly(day: str, inbox: str, lake_path: Lake, beam_args=None, gaming_day=None, chunk_lines: int = 20_000,
                lookback_days: int = 7, rebuild_from: str | None = None, retention_days: int = 7,
                log=None, command: str | None = None, recorded: dict | None = None,
                allow_empty_day: bool = False, strict_inbox: bool = False, devices: str | None = None,
                max_rejects_in_a_row: int | None = None, display: dict[str, str] | None = None) -> list[RunSummary]:
    """Read the night's inbox folder (and any earlier one that changed) into the lake: one run.

    Nothing is written before the inbox (:func:`check_inbox`) and the
    gaming-day settings (:mod:`pitwatch.lake.settings`) have passed.  A
    ``rebuild_from`` at or before the lake's first replayed day replays the
    whole lake and may change its gaming-day settings: they are recorded when
    the run has completed.  The device registry: ``devices`` (``--devices FILE``), else
    ``INBOX/devices.csv`` when it exists (:func:`pitwatch.inputs.devices.registry_path`, the one place
    that decides it).  The dealers' roster: ``INBOX/dealers.csv`` when it exists, kept in the lake
    (:mod:`pitwatch.lake.roster`; a malformed one refuses the night before anything is written).
    ``display``: the tables' display zones, as :func:`pitwatch.pipelines.batch.run_batch` records them.
    """
    from pitwatch.inputs.dealers import inbox_roster, load_roster_to_keep
    from pitwatch.inputs.devices import load_registry, registry_path
    from pitwatch.pipelines.lake_run import Night
    from pitwatch.schemas.decode import GamingDayConfig

    config = gaming_day or GamingDayConfig()
    registry = load_registry(registry_path(devices, inbox))
    roster_file = inbox_roster(inbox) if is_folder(inbox) else None
    roster = load_roster_to_keep(roster_file) if roster_file else None
    replayed = state.replayed_days(lake_path)
    check_day_not_older(day, rebuild_from, replayed)
    the_plan = plan(day, inbox, lake_path, lookback_days, rebuild_from)
    # an old night rebuilt (--day D --rebuild-from D, D before the lake's last night) runs through
    # the lake's last night: its horizon and the night's day are that night's, as if it had been given
    night_day = max([day, *replayed])
    rebuilding = rebuild_from is not None and (not replayed or rebuild_from <= replayed[0])
    lake_settings.check(lake_path, config, rebuilding)
    skipped = check_inbox(inbox, day, the_plan.days, allow_empty_day, strict_inbox)
    listings = {d: day_listing(inbox, d) for d in the_plan.days}
    for d in the_plan.days:
        if log:
            log.info("inbox folder %s: %s (%s)", d, the_plan.reasons[d], plural(len(listings[d]), "file"))
            if skipped[d]:
                log.warning("inbox folder %s: skipped %s: %s", d, plural(len(skipped[d]), "file"), _named(skipped[d]))
    files = [inbox_path(inbox, f["path"]) for d in the_plan.days for f in listings[d]]
    summary = run_batch(
        files, lake_path, beam_args=beam_args, gaming_day=config, chunk_lines=chunk_lines,
        command=command or f"pitwatch run --day {day} --inbox {inbox} --lake {lake_path}",
        night=Night(night_day, rebuild_from, retention_days, listings),
        recorded={**(recorded or {}), "inbox_skipped": [f for d in the_plan.days for f in skipped[d]],
                  "inbox_folders": the_plan.reasons},
        rebuilding=rebuilding, devices=registry, dealers=roster, display=display,
        **({} if max_rejects_in_a_row is None else {"max_rejects_in_a_row": max_rejects_in_a_row}),
        refused=[{"path": inbox_path(inbox, f["path"]), "reason": f["reason"]} for d in the_plan.days
                 for f in skipped[d] if skip_reason(os.path.basename(f["path"])) is None])
    if rebuilding and summary.status == "succeeded":
        lake_settings.record(lake_path, config, summary.run_id)
    return [summary]
