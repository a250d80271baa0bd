"""The console's speed (issue 43): each page's server time, and how soon the Live page has an alert.

    python bench/console.py --lake LAKE [--page /findings ...] [--alerts 50]

* **pages**: ``pitwatch serve`` on LAKE (a real process, users made for the run), each page
  (``/live``, ``/health`` and every ``--page PATH``) asked ``--repeat`` times by a logged-in client
  on the loopback; printed: the median and the worst time to the whole answer (on the loopback,
  the server's time).  The target: every page ≤ 1 s on a lake of 20M events.
* **live**: the event stream of ``/live/events`` open, ``--alerts`` alert lines appended one by
  one to a followed alerts file (as ``pitwatch watch --alerts-file`` appends them); printed: the
  median, 95th percentile and worst time from the append to the event reaching the client,
  against the baseline of the same lines read back by a plain loop polling the file every 10 ms
  in this process.  The target: ≤ 250 ms.

Without --lake, the lake ``pitwatch demo`` writes in a temporary folder is used.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pitwatch.console import auth  # noqa: E402
from tests.console.conftest import PEOPLE, Client, Served  # noqa: E402


def _alert(n: int) -> str:
    return json.dumps({"finding_id": f"bench-{n}", "rule_id": "BURN_SKIPPED", "title": "Burn card not burned",
                       "severity": "major", "table_id": "BAC-01", "seat": 1, "dealer_id": "D-1",
                       "ts": "2026-11-28T20:00:00Z", "expected": "a burn", "actual": "none",
                       "live_only": False}) + "\n"


def pages(served: Served, paths: list[str], repeat: int) -> None:
    c = Client(served.url)
    c.login("adam")
    print(f"{'page':<40} {'median s':>9} {'worst s':>9}")
    for path in paths:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            status, _url, _body, _ = c.get(path)
            times.append(time.perf_counter() - t0)
            if status != 200:
                print(f"{path}: HTTP {status}")
                break
        print(f"{path:<40} {statistics.median(times):>9.3f} {max(times):>9.3f}")


def _baseline(path: Path, n: int, appended: dict, into: list) -> None:
    offset = path.stat().st_size
    seen = 0
    while seen < n:
        size = path.stat().st_size
        if size > offset:
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read(size - offset)
            offset = size
            now = time.perf_counter()
            for line in data.splitlines():
                into.append(now - appended[json.loads(line)["finding_id"]])
                seen += 1
        time.sleep(0.01)


def live(served: Served, alerts_file: Path, n: int, gap: float) -> None:
    import urllib.request

    c = Client(served.url)
    c.login("vera")
    cookie = "; ".join(f"{k.name}={k.value}" for k in c.jar)
    appended: dict[str, float] = {}
    seen: list[float] = []
    base: list[float] = []

    def stream() -> None:
        request = urllib.request.Request(served.url + "/live/events",
                                         headers={"Accept": "text/event-stream", "Cookie": cookie})
        with urllib.request.urlopen(request, timeout=60) as r:
            for raw in r:
                if raw.startswith(b"data: "):
                    now = time.perf_counter()
                    seen.append(now - appended[json.loads(raw[6:])["finding_id"]])
                    if len(seen) >= n:
                        return

    reader = threading.Thread(target=stream, daemon=True)
    reader.start()
    plain = threading.Thread(target=_baseline, args=(alerts_file, n, appended, base), daemon=True)
    plain.start()
    time.sleep(1.5)
    with open(alerts_file, "a") as f:
        for i in range(n):
            line = _alert(i)
            appended[f"bench-{i}"] = time.perf_counter()
            f.write(line)
            f.flush()
            time.sleep(gap)
    reader.join(30)
    plain.join(30)

    def row(name: str, xs: list[float]) -> str:
        xs = sorted(xs)
        return (f"{name:<34} {len(xs):>6} {statistics.median(xs) * 1000:>9.0f} "
                f"{xs[int(len(xs) * 0.95) - 1] * 1000:>9.0f} {xs[-1] * 1000:>9.0f}")

    print(f"{'append to alert':<34} {'alerts':>6} {'median ms':>9} {'p95 ms':>9} {'worst ms':>9}")
    print(row("console (/live/events)", seen))
    print(row("baseline (plain 10 ms poll)", base))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lake")
    parser.add_argument("--page", action="append", default=[], help="another page to time (repeatable)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--alerts", type=int, default=50)
    parser.add_argument("--gap", type=float, default=0.2, help="seconds between two appended alerts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lake = args.lake
        if lake is None:
            subprocess.run([sys.executable, "-m", "pitwatch.cli", "demo"], cwd=tmp, check=True,
                           stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
            lake = str(Path(tmp) / "demo" / "lake")
        users = Path(tmp) / "users.json"        # never written beside the lake: in the temp folder
        for name, (role, password) in PEOPLE.items():
            auth.add_user(str(users), name, role, password, replace=True)
        alerts_file = Path(tmp) / "alerts.jsonl"
        alerts_file.write_text("")
        extra = ["--alerts-file", str(alerts_file), "--users", str(users)]
        served = Served(lake, *extra)
        try:
            pages(served, ["/live", "/health", *args.page], args.repeat)
            live(served, alerts_file, args.alerts, args.gap)
        finally:
            served.stop()


if __name__ == "__main__":
    main()
