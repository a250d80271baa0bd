"""The workers' zygote (pipelines.zygote) and its shim (pipelines.worker_shim), as real processes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

_WITHOUT_RUNNER = {k: v for k, v in os.environ.items() if "API_SERVICE_DESCRIPTOR" not in k}

_FAILING_WORKER = """
import json, subprocess, sys
from pipelines.zygote import WorkerZygote
z = WorkerZygote.start()
shim = subprocess.run([sys.executable, "-m", "pipelines.worker_shim", z.path], capture_output=True, text=True,
                      timeout=120)
z.close()
print(json.dumps({"pid": z.pid, "status": shim.returncode, "stderr": shim.stderr}))
"""


def _state(pid: int) -> str | None:
    """The process's state letter (Z: a zombie), None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def test_a_forked_worker_that_fails_reports_its_error_and_the_zygote_ends_when_closed():
    """No runner to talk to: Beam's worker main raises in the forked worker; its traceback reaches
    the shim's stderr (the shim's streams are the worker's) and the shim exits non-zero."""
    out = subprocess.run([sys.executable, "-c", _FAILING_WORKER], capture_output=True, text=True, timeout=180,
                         env=_WITHOUT_RUNNER)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["status"] != 0
    assert "Traceback" in got["stderr"] and "pipelines/zygote.py" in got["stderr"], got["stderr"][-2000:]
    assert _state(got["pid"]) is None       # closed: ended and reaped


def test_the_shim_starts_the_worker_afresh_without_a_zygote(tmp_path):
    out = subprocess.run([sys.executable, "-m", "pipelines.worker_shim", str(tmp_path / "no.sock")],
                         capture_output=True, text=True, timeout=120, env=_WITHOUT_RUNNER)
    assert out.returncode != 0
    assert "Traceback" in out.stderr and "pipelines/embedded.py" in out.stderr, out.stderr[-2000:]


_ENDS_BEFORE_FORKING = """
import os, socket, subprocess, sys
path = sys.argv[1]
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path)
listener.listen(1)
shim = subprocess.Popen([sys.executable, "-m", "pipelines.worker_shim", path],
                        stderr=subprocess.PIPE, text=True)
conn, _ = listener.accept()
conn.recv(1 << 16)      # the shim's request
conn.close()            # a zygote that ends here, before forking a worker
listener.close()
err = shim.communicate(timeout=120)[1]
print(shim.returncode, "pipelines/embedded.py" in err, "Traceback" in err)
"""


def test_the_shim_starts_the_worker_afresh_when_the_zygote_ends_before_forking(tmp_path):
    """Connected, then no worker: the shim must not fail the run (Beam would wait for a worker
    forever), it starts the worker afresh (which, with no runner here, fails as a fresh worker)."""
    out = subprocess.run([sys.executable, "-c", _ENDS_BEFORE_FORKING, str(tmp_path / "z.sock")],
                         capture_output=True, text=True, timeout=180, env=_WITHOUT_RUNNER)
    assert out.returncode == 0, out.stderr[-2000:]
    status, fresh_worker, traceback = out.stdout.split()
    assert int(status) != 0 and fresh_worker == "True" and traceback == "True"


def test_no_zygote_where_its_socket_cannot_be_made(tmp_path):
    """A TMPDIR too long for a Unix socket's path: fresh workers, and no folder left behind."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    out = subprocess.run([sys.executable, "-c", "from pipelines.zygote import WorkerZygote; "
                          "print(WorkerZygote.start() is None)"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "TMPDIR": str(deep)})
    assert out.returncode == 0 and out.stdout.split()[-1] == "True", out.stderr[-2000:]
    assert list(deep.iterdir()) == []


_ORPHAN = """
from pipelines.zygote import WorkerZygote
import os, sys
z = WorkerZygote.start()
print(z.pid, z.folder, flush=True)
os._exit(0)     # dies without closing it
"""


def test_the_zygote_ends_when_the_process_that_made_it_dies():
    out = subprocess.run([sys.executable, "-c", _ORPHAN], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    pid, folder = out.stdout.split()[-2:]
    deadline = time.monotonic() + 30
    while (_state(int(pid)) not in (None, "Z") or os.path.exists(folder)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _state(int(pid)) in (None, "Z")
    assert not os.path.exists(folder)       # its socket's folder removed too


_TWO_RUNS = """
import json, sys
from pipelines.batch import run_batch
args = ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]
first = run_batch([sys.argv[1]], sys.argv[2] + "/a", beam_args=args)
second = run_batch([sys.argv[1]], sys.argv[2] + "/b", beam_args=args)   # this process's gRPC has run by now
print(json.dumps([first.status, second.status, first.accepted, second.accepted]))
"""


def test_a_second_run_in_one_process_gets_working_workers(tmp_path):
    """Workers forked from the runner's own process hung once its gRPC had run; the zygote is a
    process of its own, so a second run in one process works as the first."""
    from pipelines.simulate import simulate

    simulate(tmp_path / "feeds", tables={"baccarat": 1}, hours=1, seed=5, faults={})
    out = subprocess.run([sys.executable, "-c", _TWO_RUNS, str(tmp_path / "feeds" / "2026-11-28"), str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    first, second, n_first, n_second = json.loads(out.stdout.splitlines()[-1])
    assert first == second == "succeeded" and n_first == n_second > 0


def test_no_zygote_when_switched_off():
    out = subprocess.run([sys.executable, "-c", "from pipelines.zygote import WorkerZygote; "
                          "print(WorkerZygote.start() is None)"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PITWATCH_WORKER_ZYGOTE": "0"})
    assert out.returncode == 0 and out.stdout.split()[-1] == "True", out.stderr[-2000:]
