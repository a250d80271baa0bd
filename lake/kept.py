"""Files the lake keeps beside its tables, named by their own SHA-256: the device registry
(:mod:`pitwatch.lake.registry`) and the dealers' roster (:mod:`pitwatch.lake.roster`).

One :class:`Kept` says where a kind of file lives and how it is named; it does what both kinds
share, so that a change to how the lake keeps such a file is made once:

* **Where.**  ``LAKE/<folder>/<stem>-<SHA-256>.csv``: the bytes exactly as given, named by
  their SHA-256, read-only.  A file whose bytes do not hash to its name was changed;
  ``pitwatch verify`` says so (:func:`pitwatch.lake.verify` ``_kept_files``), and a command that
  would use it refuses (:class:`pitwatch.lake.parquet.LakeError`).
* **Written once.**  :meth:`Kept.keep` writes a temporary file, then links it to its name, so
  a copy another writer put there first is checked, never overwritten; a writer killed while
  writing leaves a ``.tmp-<pid>`` file, which verify calls a leftover.  On an object store
  (``s3://``) it is one PUT of the whole object (:meth:`Kept._put`): there whole or not at all.
* **Which one is the lake's.**  The one the newest succeeded ``runs`` record naming one names
  (its options' member ``key``), read from the chain's head back
  (:func:`pitwatch.lake.runs.records_newest_first`, the watchers' records passed over unread) to
  the newest batch run at most — every batch run names one (or ``null``) —: the cost of a day's
  records whatever the lake's age (:meth:`Kept.held`).
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import re

from pitwatch.lake import Lake
from pitwatch.lake import parquet as lake

READ_ONLY = 0o444


@dataclasses.dataclass(frozen=True)
class Kept:
    """A kind of file the lake keeps by its SHA-256."""

    folder: str       # "_registry": below the lake's root
    stem: str         # "devices": the file is <stem>-<SHA-256>.csv
    key: str          # the member of a runs record's options that names one (its ``kept``)
    what: str         # in messages: "device registry"
    flag: str         # what a user gives to use another: "--devices FILE"
    kind: str         # verify's word for a leftover: "registry"
    checked: str      # verify's count: "registries"

    @property
    def file(self) -> re.Pattern:
        return re.compile(rf"^{re.escape(self.stem)}-([0-9a-f]{{64}})\.csv$")

    @property
    def temp(self) -> re.Pattern:
        """A file :meth:`keep` was writing (or was killed while it wrote)."""
        return re.compile(rf"^{re.escape(self.stem)}-[0-9a-f]{{64}}\.csv\.tmp-\d+$")

    def name(self, sha256: str) -> str:
        """Its path in the lake, below the root."""
        return f"{self.folder}/{self.stem}-{sha256}.csv"

    def held(self, lake_path: Lake) -> tuple[dict | None, str | None]:
        """What the newest succeeded record naming one says of it (its options' ``key``; None
        when that record named none) and that record's run id; (None, None) when no record names
        one.  Stops at the newest batch run (its options hold ``night``): one from before this
        kind was kept names none."""
        from pitwatch.lake import runs

        held, run_id = runs.newest_naming(lake_path, self.key)
        return (held if isinstance(held, dict) else None), run_id

    def read(self, lake_path: Lake, described: dict) -> tuple[str, str, bytes]:
        """The file a record names (``described["kept"]``), read and checked against its name:
        (its name in the lake, its SHA-256, its bytes); LakeError when it is gone or changed."""
        name = described.get("kept")
        match = self.file.match(os.path.basename(str(name))) if name else None
        if match is None or name != self.name(match.group(1)):
            raise lake.LakeError(f"the lake's {self.what} record names {name!r}, not a kept {self.what}: "
                                 "the lake is not intact (pitwatch verify)")
        try:
            with lake_path.fs.open_input_stream(lake_path.path(name)) as f:
                data = f.read()
        except FileNotFoundError:
            raise lake.LakeError(f"the lake's {self.what} {name} is gone: the lake is not intact "
                                 f"(pitwatch verify); give {self.flag} to use another") from None
        if hashlib.sha256(data).hexdigest() != match.group(1):
            raise lake.LakeError(f"the lake's {self.what} {name} was changed (its SHA-256 is not its name): "
                                 f"the lake is not intact (pitwatch verify); give {self.flag} to use another")
        return name, match.group(1), data

    def keep(self, lake_path: Lake, sha256: str, data: bytes) -> str:
        """Write ``data`` (whose SHA-256 is ``sha256``) into the lake, once: a copy already there
        is checked, not rewritten.  Its name in the lake.  The caller holds the lake's lock."""
        name = self.name(sha256)
        if not lake_path.local:
            return self._put(lake_path, name, data)
        path = os.path.join(lake_path, name)
        if os.path.exists(path):
            self.read(lake_path, {"kept": name})     # the same bytes, or LakeError
            return name
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, READ_ONLY)
        try:
            os.link(tmp, path)              # never over a copy another writer put there first
        except FileExistsError:
            self.read(lake_path, {"kept": name})
        finally:
            os.unlink(tmp)
        return name

    def _put(self, lake_path: Lake, name: str, data: bytes) -> str:
        """:meth:`keep` on an object store: one PUT of the whole file, no temporary file and no
        rename (a store has neither an atomic rename nor a link; an object is there whole or not at
        all, so a killed writer leaves no half file), no fsync and no mode (its ACLs govern).  A
        copy already there is checked, never rewritten: the name is the bytes' SHA-256, and the
        writer holds the lake's lock (its lease), so no other writer puts one in between."""
        import pyarrow.fs as pafs

        path = lake_path.path(name)
        if lake_path.fs.get_file_info(path).type != pafs.FileType.NotFound:
            self.read(lake_path, {"kept": name})     # the same bytes, or LakeError
            return name
        with lake_path.fs.open_output_stream(path) as out:
            out.write(data)
        return name
