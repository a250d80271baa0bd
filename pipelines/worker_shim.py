"""What the embedded runner starts for each worker when a zygote serves them (:mod:`pipelines.zygote`).

``python -m pipelines.worker_shim SOCKET``: hands the zygote this process's
standard streams, environment (the runner's addresses, the pipeline options),
working directory and arguments, waits for the worker it forks, and exits
with that worker's status (1 if the worker died without reporting one).  The
standard library only, so that it starts in milliseconds.  When the zygote
cannot be reached, or ends before it forked this shim's worker (it says so
first, :data:`FORKED`), the worker is started afresh (``python -m
pipelines.embedded``).
"""
from __future__ import annotations

import json
import os
import socket
import sys


FORKED = b"+"      # the zygote's first byte: a worker was forked for this shim (then: its exit status)


def afresh() -> None:
    os.execv(sys.executable, [sys.executable, "-m", "pipelines.embedded"])


def main(argv: list[str]) -> int:
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(argv[1])
        body = json.dumps({"env": dict(os.environ), "cwd": os.getcwd(), "argv": [argv[0]]}).encode()
        socket.send_fds(conn, [len(body).to_bytes(8, "little")], [0, 1, 2])
        conn.sendall(body)
        forked = conn.recv(1)
    except (OSError, IndexError):
        forked = b""
    if forked != FORKED:    # no zygote, or it died before forking this worker: start it afresh
        afresh()
    try:
        status = conn.recv(1)
    except OSError:
        status = b""
    return status[0] if status else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
