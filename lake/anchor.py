"""The anchor: the chain's head kept outside the lake, so a lake whose chain was recomputed shows.

Anyone who can edit the lake can also recompute every hash of its chain; they cannot change what
was already written somewhere they cannot write.  After each command that writes the lake
(``run``, ``vacuum``, ``migrate``) the head of the ``runs`` chain (:func:`pitwatch.lake.runs.runs_head`)
is appended to the anchor file as one JSON line (:func:`append`); with a key (a file outside the
lake) the line carries an HMAC-SHA-256 over the canonical encoding of its other members, so a
forged line shows too.  ``pitwatch verify --anchor FILE [--key FILE]`` checks every line against
the lake (:func:`check`).  ``docs/verify.md``: where to keep the anchor (WORM storage, a remote
syslog) and the key.

An anchor file belongs to one lake.  Its line::

    {"anchored_at": "2026-11-29T07:02:11.123456Z", "lake": "/data/lake", "n": 12, "previous": "…",
     "record_file_sha256": "…", "record_sha256": "…", "run_id": "20261129T065501Z-1a2b3c4d",
     "runs_commit_sha256": "…", "runs_version": 41, "status": "succeeded", "hmac": "…"}

``n`` numbers the entries (1, 2, …) and ``previous`` is the SHA-256 of the line before (empty for
the first), both under the signature: each entry signs the one before, so an entry removed from the
middle, added or moved shows; the end of a file that can be cut shows nowhere, which is why the
anchor is kept append-only (docs/verify.md).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import os

from pitwatch.config import NotRegularFile, read_small
from pitwatch.lake import Lake, chain
from pitwatch.wording import plural

ENTRY = ("runs_version", "run_id", "status", "record_sha256", "record_file_sha256", "runs_commit_sha256")
NUMBERED = ("n", "previous")    # an entry's number (1, 2, …) and the SHA-256 of the line before it (issue 37)
MIN_KEY_BYTES = 16
MAX_KEY_BYTES = 4096
SIGNATURE = "hmac"


class AnchorError(ValueError):
    """The anchor or the key cannot be used (missing, inside the lake, too short …): a user mistake."""


def removed_problem(entry: dict) -> str:
    """An anchored runs record the lake no longer holds (``verify`` and ``verify --since``)."""
    return (f"the lake has no runs version {entry['runs_version']} (run {entry['run_id']}, anchored "
            f"{entry.get('anchored_at')}): records were removed from the chain")


def rewritten_problem(entry: dict, differ) -> str:
    """An anchored runs record the lake holds with other hashes (``verify`` and ``verify --since``)."""
    return (f"runs version {entry['runs_version']} (run {entry['run_id']}) is not the one anchored at "
            f"{entry.get('anchored_at')}: {', '.join(differ)} differ — the chain was rewritten")


def read_key(path: str, lake_path: Lake | None = None) -> bytes:
    """The signing key: the file's bytes, white space at either end left out; at least
    :data:`MIN_KEY_BYTES`.  A key inside the lake is refused (whoever edits the lake would hold it)."""
    if lake_path is not None:
        outside_the_lake(path, lake_path, "--key")
    try:
        key = read_small(path, MAX_KEY_BYTES).strip()     # never blocks: a FIFO or a device is refused
    except NotRegularFile:
        raise AnchorError(f"key file {path} is not a regular file") from None
    except FileNotFoundError:
        raise AnchorError(f"key file {path} does not exist") from None
    except IsADirectoryError:
        raise AnchorError(f"key file {path} is a folder") from None
    except PermissionError:
        raise AnchorError(f"key file {path}: permission denied") from None
    if len(key) > MAX_KEY_BYTES:
        raise AnchorError(f"key file {path} is larger than {MAX_KEY_BYTES} bytes: not a key")
    if len(key) < MIN_KEY_BYTES:
        raise AnchorError(f"key file {path} holds {len(key)} bytes; a key has at least {MIN_KEY_BYTES} "
                          "(e.g. head -c 32 /dev/urandom | base64 > KEY)")
    return key


def outside_the_lake(path: str, lake_path: Lake, flag: str,
                     why: str = "it must be kept where the lake's writers cannot change it (docs/verify.md)") -> None:
    """Refuse (:class:`AnchorError`, a user mistake) a ``path`` inside the lake (after links are
    followed): an anchor or a key the lake's writers could edit, or a file a command would write
    over one of the lake's; ``why`` says why, after the path."""
    if lake_path.is_uri:
        return
    real, lake_real = os.path.realpath(path), os.path.realpath(lake_path.root)
    if real == lake_real or real.startswith(lake_real.rstrip(os.sep) + os.sep):
        raise AnchorError(f"{flag} {path} is inside the lake {lake_path}: {why}")


def signature(entry: dict, key: bytes) -> str:
    """HMAC-SHA-256, with ``key``, of the canonical encoding (:mod:`pitwatch.lake.chain`) of the entry
    without its signature."""
    return hmac.new(key, chain.canonical(entry, SIGNATURE), hashlib.sha256).hexdigest()


def append(anchor_path: str, lake_path: Lake, key: bytes | None = None) -> dict | None:
    """Append the lake's chain head to the anchor (one line, flushed to disk); the entry, or None
    when the lake has no record yet."""
    from pitwatch.lake.runs import runs_head

    outside_the_lake(anchor_path, lake_path, "--anchor")
    if os.path.isdir(anchor_path):
        raise AnchorError(f"anchor {anchor_path} is a folder, not a file")
    head = runs_head(lake_path)
    if head is None:
        return None
    entry = {k: head[k] for k in ENTRY}
    entry["lake"] = lake_path.address
    entry["anchored_at"] = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    try:
        fd = os.open(anchor_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    except (FileNotFoundError, NotADirectoryError):
        raise AnchorError(f"cannot write the anchor {anchor_path}: its folder does not exist") from None
    except PermissionError:
        raise AnchorError(f"cannot write the anchor {anchor_path}: permission denied") from None
    try:
        count, last = _tail(fd)
        entry["n"], entry["previous"] = count + 1, chain.bytes_sha256(last) if last is not None else ""
        if key is not None:
            entry[SIGNATURE] = signature(entry, key)     # over n and previous too: each signs the one before
        os.write(fd, (json.dumps(entry, sort_keys=True) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return entry


def _tail(fd: int) -> tuple[int, bytes | None]:
    """The number of the anchor's last entry (its ``n``; for an anchor begun before entries were
    numbered, the count of its lines) and that line's bytes; (0, None) for an empty anchor. Reads
    the file's end only, unless its last entry has no number."""
    size = os.fstat(fd).st_size
    if size == 0:
        return 0, None
    block = min(size, 64 << 10)
    os.lseek(fd, size - block, os.SEEK_SET)
    tail = os.read(fd, block)
    lines = [line for line in tail.splitlines() if line.strip()]
    last = lines[-1] if lines else None
    try:
        n = json.loads(last)["n"] if last is not None else None     # a blank tail: no number
    except (TypeError, ValueError, KeyError):
        n = None
    if type(n) is int and n > 0:
        return n, last
    os.lseek(fd, 0, os.SEEK_SET)
    body = b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
    lines = [line for line in body.splitlines() if line.strip()]
    return len(lines), (lines[-1] if lines else None)


def read_entries(anchor_path: str) -> list[tuple[int, dict | None]]:
    """(line number, entry or None when the line is not one) of every non-blank line."""
    return [(n, entry) for n, entry, _raw in read_lines(anchor_path)]


def read_lines(anchor_path: str) -> list[tuple[int, dict | None, bytes]]:
    """(line number, entry or None when the line is not one, the line's bytes) of every non-blank line."""
    try:
        with open(anchor_path, "rb") as f:
            body = f.read()
    except FileNotFoundError:
        raise AnchorError(f"anchor {anchor_path} does not exist") from None
    except IsADirectoryError:
        raise AnchorError(f"anchor {anchor_path} is a folder, not a file") from None
    except PermissionError:
        raise AnchorError(f"anchor {anchor_path}: permission denied") from None
    out = []
    for n, raw in enumerate(body.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            entry = None
        if not isinstance(entry, dict) or not isinstance(entry.get("runs_version"), int) or any(
                not isinstance(entry.get(k), str) for k in ENTRY if k != "runs_version"):
            entry = None
        out.append((n, entry, raw))
    return out


def sequence_problem(entry: dict, index: int, before: bytes | None) -> str | None:
    """What breaks the anchor's sequence at its ``index``-th entry (1-based) whose line before is
    ``before``: a number that is not its place, or a ``previous`` that is not that line's SHA-256
    (an entry removed, added or moved). None for an entry written before entries were numbered
    (no ``n``): nothing to check."""
    if "n" not in entry:
        return None
    if entry.get("n") != index:
        return (f"entry number {entry.get('n')!r} where entry {index} belongs: "
                + ("entries before it were removed" if isinstance(entry.get("n"), int) and entry["n"] > index
                   else "entries were added or moved"))
    expected = chain.bytes_sha256(before) if before is not None else ""
    if entry.get("previous") != expected:
        return "its 'previous' is not the SHA-256 of the line before it: an entry was changed, removed or moved"
    return None


def entry_problem(entry: dict | None, key: bytes | None) -> str | None:
    """What makes an anchor line unusable (not an entry; with ``key``, unsigned or a signature
    that does not match), or None."""
    if entry is None:
        return "not an anchor entry (damaged or written by something else)"
    if SIGNATURE in entry:
        if key is not None and not hmac.compare_digest(str(entry[SIGNATURE]), signature(entry, key)):
            return ("its signature does not match --key: the entry was forged or changed "
                    "(or the key is not the one it was signed with)")
    elif key is not None:
        return "the entry is not signed, and --key was given: it may have been added by someone without the key"
    return None


def differences(entry: dict, record) -> list[str]:
    """The members of ``entry`` the lake's runs record (:class:`pitwatch.lake.verify.Record`) of its
    version does not have (run id, record hash, record file and runs commit SHA-256)."""
    found = {"run_id": record.row.get("run_id") if record.row else None,
             "record_sha256": record.row.get("record_sha256") if record.row else None,
             "record_file_sha256": record.file_sha256, "runs_commit_sha256": record.commit_sha256}
    return [k for k, v in found.items() if v != entry[k]]


def check(anchor_path: str, key: bytes | None, records: list, report) -> None:
    """Check the lake's runs records (:class:`pitwatch.lake.verify.Record`, in order) against every
    line of the anchor; what does not match goes to ``report`` as a problem of kind ``anchor``."""
    entries = read_lines(anchor_path)
    where = os.path.basename(anchor_path)
    if not entries:
        report.problem("anchor", anchor_path, "the anchor holds no entry: nothing to check the lake against")
        return
    by_version = {r.version: r for r in records}
    signed = unsigned = 0
    last = -1
    before = None
    for index, (n, entry, raw) in enumerate(entries, 1):
        line = f"{where} line {n}"
        problem = entry_problem(entry, key) or (entry and sequence_problem(entry, index, before))
        before = raw
        if entry is not None:
            if SIGNATURE in entry:
                signed += 1
            else:
                unsigned += 1
        if problem:
            report.problem("anchor", line, problem)
            continue
        assert entry is not None        # entry_problem names a line that is no entry
        version = entry["runs_version"]
        if version < last:
            report.problem("anchor", line, f"runs version {version} after {last}: entries out of order")
        last = max(last, version)
        record = by_version.get(version)
        if record is None:
            report.problem("anchor", line, removed_problem(entry))
            continue
        differ = differences(entry, record)
        if differ:
            report.problem("anchor", line, rewritten_problem(entry, differ))
    if records and last < records[-1].version:
        after = plural(len([r for r in records if r.version > last]), "runs record")
        report.notes.append(f"anchor: {after} after the last anchored one (runs version {last}) not anchored yet")
    if key is None and signed:
        report.notes.append(f"anchor: {plural(signed, 'signed entry', 'signed entries')}; signatures not checked "
                            "(no --key)")
    report.notes.append(f"anchor {anchor_path}: {plural(len(entries), 'entry', 'entries')} checked"
                        + (f", {signed} signed" if signed else "") + (f", {unsigned} unsigned" if unsigned else ""))
