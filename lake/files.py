"""The lake's file system, file modes and data file names: what the writer (:mod:`pitwatch.lake.parquet`)
and the commits (:mod:`pitwatch.lake.delta`) share, so neither imports the other's module for it."""
from __future__ import annotations

import os
import re

import pyarrow.fs as pafs

# File modes on a local lake (docs/lake.md): data files are readable by all and written by the
# lake's owner only, whatever the umask; private state (the carried state, a watcher's
# checkpoint) is readable by its owner only.
DATA_FILE_MODE = 0o644
PRIVATE_FILE_MODE = 0o600


def filesystem(address: str) -> tuple[pafs.FileSystem, str]:
    """The file system of the lake at ``address`` (an absolute path or a URI) and its root there (no
    trailing slash: a table's folder is ``root/name``).  What :class:`~pitwatch.lake.Lake` resolves, once,
    when first used: everything else asks the lake (``lake.fs``, ``lake.root``)."""
    if "://" in address:
        fs, root = pafs.FileSystem.from_uri(address)
        return fs, root.rstrip("/") or root
    return pafs.LocalFileSystem(), os.path.abspath(address)


def object_store(address: str):
    """The obstore store whose root is the lake at the URI ``address`` (``s3://…``, ``gs://…``):
    the conditional puts — the run lock's lease (:mod:`pitwatch.lake.lock`), a commit put at its
    exact version (:func:`pitwatch.lake.delta._put_commit`) — go through it.  Credentials, endpoint
    and region come from the standard variables, which pyarrow, delta-rs and obstore all read."""
    from obstore.store import from_url

    return from_url(address.rstrip("/"))


def set_file_mode(fs: pafs.FileSystem, path: str, mode: int) -> None:
    """``chmod`` a file on a local lake (object stores have no modes: their ACLs govern)."""
    if isinstance(fs, pafs.LocalFileSystem):
        os.chmod(path, mode)


_REPLAY_FILE = re.compile(r"^replay-(\d{4}-\d{2}-\d{2})-")


def replay_file_name(replay_day: str, run_id: str) -> str:
    """The name of the file a run's replay of ``replay_day`` writes in a partition: the replay day
    in the name is what a later replay of that day replaces (a round started before the cutoff and
    ended after it is a row of the earlier day's partition, written by the later day's replay)."""
    return f"replay-{replay_day}-{run_id}.parquet"


def replay_day_of(path: str) -> str | None:
    match = _REPLAY_FILE.match(path.rsplit("/", 1)[-1])
    return match.group(1) if match else None


