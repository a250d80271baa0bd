"""The embedded runner's worker processes, forked ready-made instead of started afresh.

A worker that Beam starts as a new interpreter spends its first second
importing Beam, pyarrow and pitwatch (measured: 0.9-1.0 s of CPU in each of
the two workers, the whole of the first stage of a 2M-event run, while the
runner waits), and the replay stage later imports the games' plug-ins and
pokerkit (~0.3 s more in each).  So, for a run on the embedded runner with
worker processes, :class:`WorkerZygote` starts one more process before the
pipeline is built, the *zygote* (``python -m pipelines.zygote``): it
imports, once, everything a worker needs while the runner builds the
pipeline on the other core, then waits on a Unix socket.  Beam starts each
worker as ``python -m pipelines.worker_shim SOCKET`` (a small process, the
standard library only); the shim hands the zygote its environment (the
runner's addresses, the pipeline options), working directory and standard
streams, and the zygote forks a worker that runs Beam's worker main with
them, as :mod:`pipelines.embedded` does, and reports its exit status to the
shim, which exits with it.  A worker thus starts in milliseconds, with
everything imported.

Safety of the fork:

* The zygote is a new interpreter that only imports modules: it starts no
  Python thread and never gRPC (the native threads numpy and pyarrow start
  at import are the ones any forked process of theirs has, as under
  ``multiprocessing``'s fork).  Never the runner's process: gRPC does not
  survive a fork (a worker forked from a test session whose gRPC had run
  hung, measured).
* The forked workers never return into the zygote's loop: they end with
  ``os._exit`` whatever happens, after flushing their logs and streams.
* The zygote ends when the run closes it, or when the runner's process dies:
  it watches its standard input, a pipe whose other end only the runner holds.
* Without the zygote, or when it ends before forking a shim's worker (it
  sends the shim one byte once forked, then the exit status), the shim
  starts the worker afresh; an import that fails in the zygote (any error)
  is left to the workers, which import it again as a fresh worker would.
* A socket it cannot make (a ``TMPDIR`` too long for a Unix socket's path)
  means no zygote: fresh workers.
* The zygote prints nothing (its own streams are /dev/null: its imports'
  warnings are Beam's chatter); each worker writes to its shim's streams.
* Linux only (``fork`` without ``exec`` is unsafe on macOS); set
  ``PITWATCH_WORKER_ZYGOTE=0`` to have every worker started afresh.
"""
from __future__ import annotations

import importlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import traceback

from pipelines.embedded import end_worker, flush_streams
from pipelines.worker_shim import FORKED

SHIM = "-m pipelines.worker_shim"

# What the zygote imports: Beam's worker, the pipeline's steps, the replay engine with every game's
# plug-in (rules.procedures, pokerkit among them), pyarrow's readers and writers
_WARM = ("apache_beam.runners.worker.sdk_worker_main", "pipelines.graph", "rules.table",
         "rules.catalog", "rules.repeated_runs", "rules.sequence", "pyarrow.json", "pyarrow.parquet")


def enabled() -> bool:
    return (sys.platform.startswith("linux") and hasattr(socket, "send_fds")
            and os.environ.get("PITWATCH_WORKER_ZYGOTE", "1") not in ("0", ""))


class WorkerZygote:
    """The zygote process of one run (see the module): ``path`` is its socket."""

    def __init__(self, folder: str, path: str, process: subprocess.Popen):
        self.folder, self.path, self.process = folder, path, process

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    def start(cls) -> "WorkerZygote | None":
        """Start the zygote (None where it is switched off, see the module).  The socket listens
        before this returns: a worker asked for at once waits for the zygote's imports."""
        if not enabled():
            return None
        folder = tempfile.mkdtemp(prefix="pitwatch-workers-")
        path = os.path.join(folder, "zygote.sock")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
                listener.bind(path)
                listener.listen(16)
                process = subprocess.Popen(
                    [sys.executable, "-m", "pipelines.zygote", str(listener.fileno()), folder],
                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    pass_fds=[listener.fileno()])
        except OSError:     # e.g. a path too long for a Unix socket: the workers start afresh
            shutil.rmtree(folder, ignore_errors=True)
            return None
        return cls(folder, path, process)

    def close(self) -> None:
        """End the zygote (no worker is left once the pipeline is done) and remove its socket."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _plug_ins() -> list[str]:
    try:
        from rules.procedures import PROCEDURES
    except Exception:   # noqa: BLE001 - as for any import here: the workers meet it themselves
        return []
    return sorted({target.split(":")[0] for target in PROCEDURES.values()})


def serve(listener: socket.socket, alive: int = 0) -> None:
    """The zygote: import what the workers need, then fork one for each shim that connects, until
    ``alive`` (standard input) reads end of file."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl-C ends the runner, which ends the zygote
    for name in (*_WARM, *_plug_ins()):
        try:
            importlib.import_module(name)
        except Exception:   # noqa: BLE001 - left to the workers, which import it (or fail) as afresh
            pass
    children: set[int] = set()
    while True:
        ready, _, _ = select.select([listener, alive], [], [], 1.0)
        for pid in list(children):
            if os.waitpid(pid, os.WNOHANG)[0]:
                children.discard(pid)
        if alive in ready:      # the run is over, or its process died: no more workers
            return
        if listener in ready:
            conn, _ = listener.accept()
            flush_streams()
            pid = os.fork()
            if pid == 0:    # a worker: never returns into the zygote's loop
                try:
                    signal.signal(signal.SIGINT, signal.default_int_handler)
                    listener.close()
                    os.close(alive)
                    _work(conn)
                finally:
                    os._exit(1)
            conn.close()
            children.add(pid)


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    head, fds, _flags, _addr = socket.recv_fds(conn, 8, 3)
    while len(head) < 8:
        more = conn.recv(8 - len(head))
        if not more:
            raise EOFError("the worker shim closed before its request")
        head += more
    size, body = int.from_bytes(head, "little"), b""
    while len(body) < size:
        more = conn.recv(min(size - len(body), 1 << 20))
        if not more:
            raise EOFError("the worker shim closed before its request")
        body += more
    return json.loads(body), fds


def _work(conn: socket.socket) -> None:
    """Become the worker the shim asked for: its streams, environment and directory, then Beam's worker
    main; its exit status goes back to the shim, then the process ends (os._exit, no teardown)."""
    status = 1
    try:
        conn.sendall(FORKED)
        request, fds = _receive(conn)
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.argv = list(request["argv"])
        from apache_beam.runners.worker import sdk_worker_main

        sdk_worker_main.main(sys.argv)
        status = 0
    except SystemExit as exc:
        status = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
    except BaseException:   # noqa: BLE001 - reported as a fresh worker would: traceback, non-zero status
        traceback.print_exc()
    finally:
        end_worker(status, report=lambda code: _report(conn, code))


def _report(conn: socket.socket, status: int) -> None:
    try:
        conn.sendall(bytes([min(max(status, 0), 255)]))
    except OSError:     # the shim is gone: nobody to tell
        pass


if __name__ == "__main__":     # python -m pipelines.zygote LISTENING_FD FOLDER (removed at the end)
    _status = 1
    try:
        serve(socket.socket(fileno=int(sys.argv[1])))
        _status = 0
    finally:
        shutil.rmtree(sys.argv[2], ignore_errors=True)
        os._exit(_status)   # no teardown of a heap holding Beam and pyarrow: the run waits for this exit
