"""The lake: its Delta tables, their Parquet files, the runs chain and its anchor, the lake's lock,
settings and registry, and what keeps it (verify, vacuum, migrate).  No Beam.  See docs/lake.md.

:class:`Lake` is where a lake is: its location, file system and root, resolved once
(:meth:`Lake.at`, where a location comes in: the CLI, a bench, a test) and handed to every function
of these modules (they take a ``Lake``, never a path or a URI).  It hands out tables
(:class:`Table`: files, dataset, fence, commit at a pinned version), the lake's lock and the runs
chain.  It is thin: every method calls the module function that does the work.
"""
from __future__ import annotations

import dataclasses
import functools
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:                # no pyarrow on import: the CLI imports this before it knows its command
    import pyarrow.fs as pafs


@dataclasses.dataclass(frozen=True)
class Lake:
    """A lake: its location as given (a folder, or a URI), its address (the absolute path, or the
    URI), its pyarrow file system and its root on it (no trailing slash: table ``name`` is the folder
    ``root/name``), resolved on first use and kept.  Frozen and picklable (a Beam worker gets it whole: a pyarrow file system pickles);
    equal when the address is."""

    location: str = dataclasses.field(compare=False)
    address: str

    @classmethod
    def at(cls, location: str | os.PathLike) -> Lake:
        """The lake at ``location`` (a path, relative or not, or a URI such as ``file:///…``,
        ``s3://…``, ``memory://…``), kept as given for what pitwatch says of it (``str(lake)``);
        ``address``: the absolute path, or the URI, what the lake is compared by.  Its file system is
        resolved once, when first used (an object store's is not contacted before: a command that
        refuses one says so first)."""
        location = os.fspath(location)
        return cls(location, location if "://" in location else os.path.abspath(location))

    @functools.cached_property
    def _resolved(self) -> tuple[pafs.FileSystem, str]:
        from pitwatch.lake.files import filesystem

        return filesystem(self.address)

    @property
    def fs(self) -> pafs.FileSystem:
        return self._resolved[0]

    @property
    def root(self) -> str:
        return self.address if not self.is_uri else self._resolved[1]

    def __str__(self) -> str:
        return self.location

    def __fspath__(self) -> str:
        """The lake's local folder (``os.path.join(lake, …)``); a TypeError for an object store."""
        if not self.local:
            raise TypeError(f"the lake {self.location} is on an object store: it has no local path")
        return self.root

    @property
    def is_uri(self) -> bool:
        return "://" in self.address

    @property
    def local(self) -> bool:
        """On the local disk (a plain path or a ``file://`` URI)."""
        return not self.is_uri or self.address.startswith("file://")

    def path(self, *parts: str) -> str:
        """``root/part/…``: a path the lake's file system opens."""
        return "/".join((self.root, *parts))

    def reach(self):
        """What is at the lake's root (a ``pyarrow.fs.FileType``; one request on an object store), or
        :class:`pitwatch.lake.parquet.LakeError` naming the store's settings when the store cannot be
        asked (its endpoint, region or credentials): what every command says of an unreachable store."""
        try:
            return self.fs.get_file_info(self.root).type
        except OSError as exc:
            from pitwatch.lake.parquet import LakeError

            said = (str(exc).strip() or type(exc).__name__).splitlines()[0]
            raise LakeError(f"cannot read the lake at {self}: {said} (the store's endpoint, region and "
                            "credentials: docs/lake.md, \"Supported stores\")") from None

    # ------------------------------------------------------------ tables

    def table(self, name: str, version: int | None = None) -> Table:
        """Table ``name`` pinned at ``version`` (default: its latest now, None if it has no commit)."""
        from pitwatch.lake import delta

        return Table(self, name, delta.current_version(self, name) if version is None else version)

    def pinned(self, name: str, as_of: str | None = None) -> Table:
        """Table ``name`` at the version readers read (:meth:`pinned_versions`; ``runs``: its latest)."""
        if name == "runs":
            return self.table(name)
        return Table(self, name, (self.pinned_versions(as_of) or {}).get(name))

    def fences(self, names) -> dict[str, int]:
        from pitwatch.lake import delta

        return delta.fences(self, names)

    # ------------------------------------------------------------ the lock

    def hold(self, holder: dict, timeout: float, log, **kwargs):
        """The lake's lock for a ``with`` block (:func:`pitwatch.lake.lock.hold`)."""
        from pitwatch.lake import lock

        return lock.hold(self, holder, timeout, log, **kwargs)

    def holding(self) -> bool:
        from pitwatch.lake import lock

        return lock.holding(self)

    def check_held(self) -> None:
        """Before a commit: refuse if this process's lease on the lake is lost (:func:`pitwatch.lake.lock.check_held`)."""
        from pitwatch.lake import lock

        lock.check_held(self)

    # ------------------------------------------------------------ the runs chain

    def runs_head(self) -> dict | None:
        """The chain's head (:func:`pitwatch.lake.runs.runs_head`)."""
        from pitwatch.lake import runs

        return runs.runs_head(self)

    def pinned_versions(self, as_of: str | None = None) -> dict[str, int] | None:
        """Every table's version readers read (:func:`pitwatch.lake.versions.pinned_versions`)."""
        from pitwatch.lake import versions

        return versions.pinned_versions(self, as_of)

    def run_records(self, skip_watchers: bool = False):
        """The runs chain's records, newest first (:func:`pitwatch.lake.runs.records_newest_first`)."""
        from pitwatch.lake import runs

        return runs.records_newest_first(self, skip_watchers)


@dataclasses.dataclass(frozen=True)
class Table:
    """Table ``name`` of ``lake`` at ``version`` (None: it had no commit then): what a reader reads of it,
    and how a writer commits to it.  Delegates to :mod:`pitwatch.lake.delta`."""

    lake: Lake
    name: str
    version: int | None

    @property
    def exists(self) -> bool:
        return self.version is not None

    @property
    def folder(self) -> str:
        return self.lake.path(self.name)

    def files(self) -> list[str]:
        """The data files at the version (:func:`pitwatch.lake.delta.files_at`), sorted."""
        from pitwatch.lake import delta

        return delta.files_at(self.lake, self.name, self.version)

    def dataset(self, schema=None, partitioned: bool | None = None):
        """The version as a ``pyarrow.dataset`` (:func:`pitwatch.lake.delta.dataset`)."""
        from pitwatch.lake import delta

        return delta.dataset(self.lake, self.name, self.files(), schema, partitioned)

    def read(self, columns: list[str] | None = None):
        """The version's rows as a ``pyarrow.Table`` (:func:`pitwatch.lake.parquet.read_table`)."""
        from pitwatch.lake import parquet

        if self.version is None:                   # no such table at the version: its columns, no rows
            empty = parquet.LAKE_TABLES[self.name].empty_table()
            return empty.select(columns) if columns else empty
        return parquet.read_table(self.lake, self.name, columns, self.version)

    def snapshot(self):
        """The version's state from the chained log (:func:`pitwatch.lake.delta_log.snapshot`)."""
        from pitwatch.lake import delta_log

        return None if self.version is None else delta_log.snapshot(self.lake, self.name, self.version)

    def fence(self) -> int:
        """The table's pitwatch transaction version now (:func:`pitwatch.lake.delta.fence`)."""
        from pitwatch.lake import delta

        return delta.fence(self.lake, self.name)

    def commit(self, files, replayed_days=None, **kwargs) -> int:
        """Commit ``files`` (:func:`pitwatch.lake.delta.commit_replays`, its keyword arguments); the new version."""
        from pitwatch.lake import delta

        return delta.commit_replays(self.lake, self.name, files, replayed_days, **kwargs)
