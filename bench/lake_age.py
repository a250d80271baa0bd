"""What a lake's age costs: commit, night, sql, query, verify and a late file, aged lake against young (issue 35).

Usage::

    .venv/bin/python bench/lake_age.py --quick                # 14 nights, 1,500 watcher commits
    .venv/bin/python bench/lake_age.py --keep /data/lake-age  # a year: 365 nights, 50,000 commits
    .venv/bin/python bench/lake_age.py --keep /data/lake-age --repeat 5   # the same aged lake again

**Aging** (the slow part; ``--keep DIR`` keeps the aged lake in ``DIR/<a key of the aging flags>/``
and the next invocation with the same flags reuses it, or goes on where an interrupted one
stopped; the key is the flags', not the code's: after a change to what a night or a commit
writes, age again in another DIR, or the old lake is measured with the new code).  A floor of
``--tables`` (default ``baccarat=1,stud=1``) is written by ``pitwatch simulate`` for ``--nights``
+ 1 gaming days (24 h of play a day; in pieces of 28 days, each its own seed: the simulator caps
``--hours`` at 744, so the devices' ``seq`` starts again every 28 days), and the lake is aged in
day order, each gaming day D as a year would:

* the watcher's commits of D: ``--watcher-commits`` / ``--nights`` of them (about 137 a day at the
  default, so a year of them is 50,000), each a real ``pitwatch.live.alerts_table.AlertsTable.flush()`` of a
  few (3) alerts of D: the alerts commit, its data file, its chained ``runs`` record and the
  checkpoints and log archive that code writes, exactly what a watcher writes (one child process
  a day: a watcher restarted daily, its ``n`` carried over as its checkpoint would);
* the night of D: one real ``pitwatch.pipelines.batch.run_batch([inbox/D], lake,
  beam_args=["--runner=FnApiRunner"])`` in a child process of its own, as ``pitwatch run`` is.

Each of those child processes runs at its day's time (``faketime``, Debian's package: the bench
refuses to age without it): the watcher's commits of D at 18:00 of D, the night of D at 07:00 of
D+1.  So the lake's log holds a year of times — the removes of a compaction dated the day it was
made, which the ``alerts`` table's checkpoints drop a day later (its one-day tombstone retention),
as on a real floor; aged in minutes on the real clock, no remove would be a day old and every
checkpoint would keep them all.  The measures run on the real clock.

The **young** lake is the night of the aged lake's last day alone plus a few (5) watcher commits;
the **young-day** lake is that lake's first day as a casino's first night has it: the watcher's
commits of the whole day (as many as an aged day has, ``--watcher-commits`` / ``--nights``), then
its night — what the night's reads that grow with a day's watcher commits cost on a first night
(the night is measured on both: "young" compares age and a day's watcher volume together,
"young-day" age alone); the **own-day** lake is the night of the first day of the aged lake's last
week alone (the late file's baseline).  Day folders of the inbox that no later step needs are
removed once aged.

**Measured**, ``--repeat`` times each, young and aged side by side in the same run, every operation
that writes on a fresh copy of its lake (the read-only ones on the kept lake; the bench checks
that they left it unchanged), each in a child process:

1. a watcher commit: ``flush()`` of one alert, the first commit of a child process (its caches
   cold), and the steady cost inside one process: the median of commits 21-30 of that child;
2. the nightly run of the next day (the day after the aged lake's last; the same files for both),
   and the same night into the young-day lake (its ratio: aged against young-day);
3. ``pitwatch sql "select count(*) from findings where gaming_day = date 'D'"`` (D: the aged
   lake's last day, the young lake's only day), as a subprocess (interpreter start included);
4. ``pitwatch query findings_by_rule --param from_day=D --param to_day=D``, as a subprocess;
5. ``pitwatch verify --lake L --since ANCHOR``: on the copy the nightly run of (2) wrote, with an
   anchor (outside the lake) whose last entry is that copy's head before the night, so what is
   new is the night (a nightly check after the nightly run); and, for reference, with no target,
   ``pitwatch verify --lake L`` of the whole kept lake;
6. a late 200-line file of the first day of the last week (that day's dealer-terminal file cut to
   its first 200 lines, under a new name) run into the aged lake, against the same file run into
   the own-day lake.

``--only OP,…`` measures only those operations (``night`` is run for ``verify``, which checks what
it wrote).  Prints the median of each, the ratio aged/young and its target (≤ 1.25; the late file ≤ 1.5),
the aged lake's size (commits per table, files in each ``_delta_log`` and ``_log_archive``,
data files per table) and what aging cost (seconds per night, per 1,000 watcher commits, early
against late).  Never needs the network: Beam's embedded FnApiRunner is named explicitly.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

AGING_FORMAT = 4                 # bump when the aging changes: a kept lake of another format is not reused
                                 # (2: the young-day lake; runs commits that say whether their record is the
                                 # watcher's; 3: the watcher compacts each closed day of its alerts files;
                                 # 4: each aging step runs at its day's time, under faketime)
FIRST_DAY = _dt.date(2025, 9, 1)  # the aged lake's first gaming day (a year later is still in the past)
CHUNK_DAYS = 28                  # days per `pitwatch simulate` (its --hours is capped at 744)
ALERTS_PER_COMMIT = 3
YOUNG_COMMITS = 5
WARM_COMMITS, STEADY_COMMITS = 20, 10
BEAM = ["--runner=FnApiRunner"]
TARGET, LATE_TARGET = 1.25, 1.5
WATCH_ID = "bench-watch"

ALERT = r'''
import datetime as _dt, hashlib
RULES = (("BURN_SKIPPED", "major", "BAC-01", "baccarat", "dealer_terminal"),
         ("SHOE_CARD_MISMATCH", "critical", "BAC-01", "baccarat", "shoe"),
         ("SEQ_GAP", "minor", "STU-01", "stud", "dealer_terminal"))
def alert(day, n, k, of=1):
    """Alert k of commit n of gaming day ``day`` (``of`` commits that day: spread over its 24 h)."""
    rule, severity, table, game, source = RULES[(n + k) % len(RULES)]
    start = _dt.datetime.fromisoformat(day + "T06:00:00+00:00")
    ts = start + _dt.timedelta(seconds=int(86000 * (n % of) / max(of, 1)) + k)
    fid = hashlib.sha256(f"bench-{day}-{n}-{k}".encode()).hexdigest()
    ev = f"ev-{n}-{k}"
    return {"finding_id": fid, "rule_id": rule, "title": rule.replace("_", " ").lower(), "severity": severity,
            "game": game, "table_id": table, "pack_id": None, "round_id": f"{table}-{n % 9999:04d}", "seat": None,
            "spot": None, "device_id": "DT-" + table.replace("-", ""), "dealer_id": "D-0001",
            "ts": ts.isoformat(timespec="milliseconds").replace("+00:00", "Z"), "gaming_day": day,
            "expected": "as the procedure says", "actual": "otherwise", "event_ids": [ev], "source": source,
            "evidence": [{"device_id": "DT-" + table.replace("-", ""), "event_id": ev}], "ts_offset": 0,
            "evidence_from": ts.isoformat(timespec="milliseconds").replace("+00:00", "Z")}
'''

WATCHER = r'''
import json, time
import pitwatch.lake.delta, pitwatch.lake.delta_log, pitwatch.lake.parquet, pitwatch.lake.runs
from pitwatch.lake import Lake
from pitwatch.live.alerts_table import AlertsTable
sink = AlertsTable(Lake.at({lake!r}), {watch_id!r})
sink.recover({{"n": {n}}})          # what the watcher's checkpoint holds after a restart
times = []
for i in range({count}):
    sink.send([alert({day!r}, {first} + i, k, {of}) for k in range({per})])
    t = time.perf_counter()
    sink.flush()
    times.append(time.perf_counter() - t)
print(json.dumps({{"seconds": sum(times), "times": times, "n": sink.n}}))
'''

COMMIT = r'''
import json, statistics, time
import deltalake, pitwatch.lake.delta, pitwatch.lake.delta_log, pitwatch.lake.parquet, pitwatch.lake.runs   # imported: not timed
from pitwatch.lake import Lake
from pitwatch.live.alerts_table import AlertsTable
sink = AlertsTable(Lake.at({lake!r}), {watch_id!r})    # a watcher id of its own: new file names, n from 0, no recovery
times = []
for i in range({warm} + {steady}):
    sink.send([alert({day!r}, 10 ** 7 + i, 0)])
    t = time.perf_counter()
    sink.flush()
    times.append(time.perf_counter() - t)
print(json.dumps({{"cold": times[0], "steady": statistics.median(times[{warm}:]), "times": times}}))
'''

RUN = r'''
import json, time
from pitwatch.lake import Lake
from pitwatch.pipelines.batch import run_batch
t = time.perf_counter()
s = run_batch({inputs!r}, Lake.at({lake!r}), beam_args={beam!r})
print(json.dumps({{"seconds": time.perf_counter() - t, "days": s.gaming_days, "status": s.status,
                   "findings": s.findings, "accepted": s.accepted}}))
'''


def child(code: str, at: str | None = None) -> dict:
    """Run python code in its own process (cwd: the checkout); it prints one JSON line last.  ``at``
    (``YYYY-MM-DD HH:MM:SS``, UTC): the process's clock starts there (``faketime``), so what it
    writes into the log — commit times, removes' ``deletionTimestamp``, the removes delta-rs drops
    from a checkpoint — is what that day wrote."""
    clock = ["faketime", "-f", f"@{at}"] if at else []
    out = subprocess.run([*clock, sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "TZ": "UTC"})
    if out.returncode != 0:
        raise SystemExit(f"a child process failed (exit {out.returncode}):\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def pitwatch(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    """``pitwatch ARGS`` as a subprocess; (wall seconds, the completed process)."""
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "pitwatch.cli", *args], cwd=ROOT, capture_output=True, text=True)
    return time.perf_counter() - t, out


def day_of(i: int) -> str:
    return (FIRST_DAY + _dt.timedelta(days=i)).isoformat()


def commits_on(i: int, nights: int, total: int) -> int:
    """The watcher commits of night ``i`` (0-based): ``total`` spread evenly over ``nights``."""
    return total * (i + 1) // nights - total * i // nights


class Aging:
    """The aged, young and own-day lakes in ``work``, made (or finished) as needed; progress in age.json."""

    def __init__(self, work: Path, nights: int, commits: int, tables: str, seed: int) -> None:
        self.work, self.nights, self.commits, self.tables, self.seed = work, nights, commits, tables, seed
        self.inbox, self.aged, self.young, self.own = work / "inbox", work / "aged", work / "young", work / "own-day"
        self.young_day = work / "young-day"
        self.state_file = work / "age.json"
        self.state = json.loads(self.state_file.read_text()) if self.state_file.exists() else {
            "format": AGING_FORMAT, "chunks": [], "nights_done": 0, "watcher_done": 0, "n": 0,
            "night_seconds": [], "commit_seconds": [], "young": False, "young_day": False, "own_day": False}
        self.last = day_of(nights - 1)              # the aged lake's last day, the young lake's only one
        self.next = day_of(nights)                  # the nightly run timed
        self.late_day = day_of(max(0, nights - 7))  # the first day of the last week
        self.keep_days = {self.last, self.next, self.late_day}

    def save(self) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state))
        tmp.replace(self.state_file)

    def ensure_day(self, i: int) -> Path:
        """The inbox folder of day ``i``, simulating its piece of ``CHUNK_DAYS`` days first if need be."""
        chunk = i // CHUNK_DAYS
        if chunk not in self.state["chunks"]:
            first = chunk * CHUNK_DAYS
            days = min(CHUNK_DAYS, self.nights + 1 - first)
            out = self.work / f"sim-{chunk}"
            shutil.rmtree(out, ignore_errors=True)
            t = time.perf_counter()
            sim = subprocess.run([sys.executable, "-m", "pitwatch.cli", "simulate", "--out", str(out),
                                  "--tables", self.tables, "--hours", str(24 * days),
                                  "--start", f"{day_of(first)}T06:00:00Z", "--seed", str(self.seed + chunk),
                                  "--workers", "2", "--quiet"], cwd=ROOT, capture_output=True, text=True)
            if sim.returncode != 0:
                raise SystemExit(f"pitwatch simulate failed:\n{sim.stderr[-3000:]}")
            self.inbox.mkdir(parents=True, exist_ok=True)
            wanted = {day_of(k) for k in range(first, first + days)}
            for folder in sorted(out.iterdir()):
                if folder.is_dir() and folder.name in wanted:
                    shutil.rmtree(self.inbox / folder.name, ignore_errors=True)
                    folder.rename(self.inbox / folder.name)
            shutil.rmtree(out, ignore_errors=True)
            print(f"  simulated days {first + 1}-{first + days} ({self.tables}) in {time.perf_counter() - t:.0f} s",
                  flush=True)
            self.state["chunks"].append(chunk)
            self.save()
        folder = self.inbox / day_of(i)
        if not folder.is_dir():
            raise SystemExit(f"{folder}: pitwatch simulate wrote no folder for this gaming day")
        return folder

    def run_night(self, lake: Path, i: int) -> dict:
        """The night of day ``i``, run at 07:00 the day after (the casino's cutoff is 06:00)."""
        result = child(RUN.format(inputs=[str(self.ensure_day(i))], lake=str(lake), beam=BEAM),
                       at=f"{day_of(i + 1)} 07:00:00")
        if result["status"] != "succeeded":
            raise SystemExit(f"the night of {day_of(i)} did not succeed: {result}")
        return result

    def watcher(self, lake: Path, day: str, n: int, count: int, at: str | None = None) -> dict:
        """A day's watcher commits, at 18:00 of that day unless ``at`` says when (a day's commits
        are written in minutes: its closed days' compactions are stamped with that day)."""
        return child(ALERT + WATCHER.format(lake=str(lake), watch_id=WATCH_ID, n=n, count=count, day=day, first=n,
                                    of=max(count, 1), per=ALERTS_PER_COMMIT), at=at or f"{day} 18:00:00")

    def age(self) -> None:
        st = self.state
        began = time.perf_counter()
        if shutil.which("faketime") is None and not (st["nights_done"] >= self.nights and st["young"]
                                                    and st.get("young_day") and st["own_day"]):
            raise SystemExit("aging needs faketime (Debian: apt-get install faketime): each step runs at its day's time")
        if st["nights_done"] < self.nights:
            print(f"aging: {self.nights} nights of {self.tables}, {self.commits:,} watcher commits "
                  f"(from night {st['nights_done'] + 1}) …", flush=True)
        while st["nights_done"] < self.nights:
            i = st["nights_done"]
            day = day_of(i)
            t_night = time.perf_counter()
            want = sum(commits_on(k, self.nights, self.commits) for k in range(i + 1))
            if st["watcher_done"] < want:
                w = self.watcher(self.aged, day, st["n"], want - st["watcher_done"])
                st["commit_seconds"].append([i, want - st["watcher_done"], w["seconds"]])
                st["watcher_done"], st["n"] = want, w["n"]
                self.save()
            r = self.run_night(self.aged, i)
            st["night_seconds"].append([i, r["seconds"]])
            st["nights_done"] = i + 1
            st["wall_seconds"] = st.get("wall_seconds", 0) + time.perf_counter() - t_night
            self.save()
            if day not in self.keep_days:
                shutil.rmtree(self.inbox / day, ignore_errors=True)
            if (i + 1) % 7 == 0 or i + 1 == self.nights:
                c = st["commit_seconds"][-1] if st["commit_seconds"] else [0, 1, 0]
                print(f"  night {i + 1}/{self.nights} ({day}): run {r['seconds']:.1f} s, watcher "
                      f"{1000 * c[2] / max(c[1], 1):.0f} ms/commit, {st['watcher_done']:,} commits; "
                      f"{time.perf_counter() - began:.0f} s so far", flush=True)
        if not st["young"]:
            shutil.rmtree(self.young, ignore_errors=True)
            self.run_night(self.young, self.nights - 1)
            self.watcher(self.young, self.last, 0, YOUNG_COMMITS, at=f"{day_of(self.nights)} 09:00:00")
            st["young"] = True
            self.save()
        if not st.get("young_day"):
            shutil.rmtree(self.young_day, ignore_errors=True)
            self.watcher(self.young_day, self.last, 0, commits_on(self.nights - 1, self.nights, self.commits))
            self.run_night(self.young_day, self.nights - 1)
            st["young_day"] = True
            self.save()
        if not st["own_day"]:
            shutil.rmtree(self.own, ignore_errors=True)
            self.run_night(self.own, max(0, self.nights - 7))
            st["own_day"] = True
            self.save()
        self.ensure_day(self.nights)

    def late_file(self) -> Path:
        """The late file: the first day of the last week's dealer-terminal file cut to 200 lines, a new name."""
        src = sorted((self.inbox / self.late_day).glob("DT-*.jsonl"))[0]
        out = self.work / "late" / f"{src.stem}-late.jsonl"
        out.parent.mkdir(exist_ok=True)
        with open(src, "rb") as f:
            out.write_bytes(b"".join(line for _, line in zip(range(200), f)))
        return out


def fingerprint(lake: Path) -> set:
    """Every file under ``lake`` with its size and mtime: a read-only operation leaves it unchanged."""
    out = set()
    for base, _dirs, files in os.walk(lake):
        for f in files:
            if f.endswith(".lock"):
                continue
            p = os.path.join(base, f)
            s = os.stat(p)
            out.add((p, s.st_size, s.st_mtime_ns))
    return out


def size_facts(lake: Path) -> list[tuple]:
    """(table, commits, files in _delta_log, files in _log_archive, data files now, data files on disk)."""
    from pitwatch.lake import Lake, delta_log

    at = Lake.at(lake)
    rows = []
    for folder in sorted(p for p in lake.iterdir() if (p / delta_log.LOG_FOLDER).is_dir()):
        name = folder.name
        snap = delta_log.snapshot(at, name)
        on_disk = sum(1 for base, _d, files in os.walk(folder)
                      if delta_log.LOG_FOLDER not in base and delta_log.ARCHIVE_FOLDER not in base
                      for f in files if f.endswith(".parquet"))
        rows.append((name, len(delta_log.history_versions(at, name)),
                     len(delta_log.listed(at, name)),
                     len(delta_log.listed(at, name, delta_log.ARCHIVE_FOLDER)),
                     len(snap.adds) if snap else 0, on_disk))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Targets (issue 35): every ratio aged/young <= 1.25, the late file <= 1.5.")
    ap.add_argument("--nights", type=int, default=365, help="nightly runs that age the lake (default 365)")
    ap.add_argument("--watcher-commits", type=int, default=50_000,
                    help="watcher (alerts) commits spread over those nights (default 50,000)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", default=None, metavar="DIR",
                    help="keep the aged lake (and the young ones) in DIR/<key of the aging flags>/ and reuse it")
    ap.add_argument("--quick", action="store_true", help="14 nights, 1,500 watcher commits")
    ap.add_argument("--tables", default="baccarat=1,stud=1", help="the floor: pitwatch simulate --tables")
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--only", default=None, metavar="OP,…",
                    help="measure only these: commit (cold and steady), night, verify, sql, query, verify_full, late")
    args = ap.parse_args()
    if args.quick:
        args.nights, args.watcher_commits = 14, 1500
    if args.nights < 7:
        ap.error("--nights must be 7 or more (the late file is of the first day of the last week)")

    floor = args.tables.replace(",", "_").replace("=", "")
    key = f"age{AGING_FORMAT}-n{args.nights}-w{args.watcher_commits}-t{floor}-s{args.seed}"
    work = Path(args.keep) / key if args.keep else Path(tempfile.mkdtemp(prefix="pitwatch-lake-age-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work: {work}", flush=True)
    aging = Aging(work, args.nights, args.watcher_commits, args.tables, args.seed)
    t_age = time.perf_counter()
    aging.age()
    print(f"lakes ready in {time.perf_counter() - t_age:.0f} s", flush=True)
    late = aging.late_file()

    ops = ["commit_cold", "commit_steady", "night", "night_day", "sql", "query", "verify", "verify_full", "late"]
    if args.only:
        wanted = {w.strip() for w in args.only.split(",") if w.strip()}
        unknown = wanted - set(ops) - {"commit"}
        if unknown:
            ap.error(f"--only: no operation {', '.join(sorted(unknown))} (one of commit, {', '.join(ops)})")
        wanted |= {"commit_cold", "commit_steady"} if "commit" in wanted else set()
        wanted |= {"night", "night_day"} if wanted & {"night", "night_day", "verify"} else set()
        ops = [op for op in ops if op in wanted]
    from pitwatch.lake import Lake
    from pitwatch.lake import anchor as anchors
    times: dict[tuple[str, str], list[float]] = {(op, w): [] for op in ops for w in ("young", "aged")}
    answers: dict[tuple[str, str], str] = {}
    lakes = {"young": aging.young, "aged": aging.aged}
    before = {w: fingerprint(p) for w, p in lakes.items()}

    def fresh(src: Path, r: int) -> Path:
        target = work / f"try-{r}"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(src, target, symlinks=True)
        return target

    def measure_night(who: str, lake: Path, r: int) -> None:
        """The next night's run into a fresh copy of ``lake``; then ``verify --since`` the night before."""
        target = fresh(lake, r)
        anchor = work / f"anchor-{who}-{r}.jsonl"       # outside the lake, as pitwatch run --anchor keeps it
        anchor.unlink(missing_ok=True)
        anchors.append(str(anchor), Lake.at(target))
        n = child(RUN.format(inputs=[str(aging.inbox / aging.next)], lake=str(target), beam=BEAM))
        assert n["status"] == "succeeded", n
        times["night", who].append(n["seconds"])
        answers["night", who] = f"replayed {len(n['days'])} day(s): {', '.join(n['days'])}"
        if "verify" in ops:
            s, out = pitwatch("verify", "--lake", str(target), "--since", str(anchor), "--format", "json")
            if out.returncode not in (0, 5):
                raise SystemExit(f"pitwatch verify --since exited {out.returncode}:\n{out.stderr[-3000:]}")
            times["verify", who].append(s)
            try:
                rep = json.loads(out.stdout)
                answers["verify", who] = (f"exit {out.returncode}, intact: {rep.get('intact')}, checked "
                                          + ", ".join(f"{v} {k}" for k, v in rep["checked"].items()
                                                      if k in ("commits", "data_files", "runs_records")))
            except (ValueError, KeyError):
                answers["verify", who] = f"exit {out.returncode}, intact: ?"
        shutil.rmtree(target, ignore_errors=True)

    sql = f"select count(*) from findings where gaming_day = date '{aging.last}'"
    for r in range(args.repeat):
        for who, lake in lakes.items():
            if "commit_cold" in ops:
                target = fresh(lake, r)
                c = child(ALERT + COMMIT.format(lake=str(target), watch_id=f"bench-commit-{r}", day=aging.last,
                                        warm=WARM_COMMITS, steady=STEADY_COMMITS))
                times["commit_cold", who].append(c["cold"])
                times["commit_steady", who].append(c["steady"])
                shutil.rmtree(target, ignore_errors=True)

            if "night" in ops:
                measure_night(who, lake, r)
            if who == "young" and "night_day" in ops:     # the same night into the young-day lake
                target = fresh(aging.young_day, r)
                n = child(RUN.format(inputs=[str(aging.inbox / aging.next)], lake=str(target), beam=BEAM))
                assert n["status"] == "succeeded", n
                times["night_day", "young"].append(n["seconds"])
                answers["night_day", "young"] = f"replayed {len(n['days'])} day(s): {', '.join(n['days'])}"
                shutil.rmtree(target, ignore_errors=True)

            for op, argv in (("sql", ["sql", sql, "--lake", str(lake), "--format", "csv"]),
                             ("query", ["query", "findings_by_rule", "--lake", str(lake), "--param",
                                        f"from_day={aging.last}", "--param", f"to_day={aging.last}",
                                        "--format", "csv"]),
                             ("verify_full", ["verify", "--lake", str(lake), "--format", "json"])):
                if op not in ops:
                    continue
                s, out = pitwatch(*argv)
                if out.returncode != 0 and not (op == "verify_full" and out.returncode == 5):
                    raise SystemExit(f"pitwatch {op} exited {out.returncode}:\n{out.stderr[-3000:]}")
                times[op, who].append(s)
                if op == "verify_full":
                    try:
                        intact = json.loads(out.stdout).get("intact")
                    except ValueError:
                        intact = "?"
                    answers[op, who] = f"exit {out.returncode}, intact: {intact}"
                elif op == "sql":
                    answers[op, who] = "count " + " ".join(out.stdout.split()[1:])[:40]
                else:
                    answers[op, who] = f"{max(0, len(out.stdout.strip().splitlines()) - 1)} row(s)"

            if "late" in ops:
                base = aging.own if who == "young" else aging.aged
                target = fresh(base, r)
                lf = child(RUN.format(inputs=[str(late)], lake=str(target), beam=BEAM))
                assert lf["status"] == "succeeded", lf
                times["late", who].append(lf["seconds"])
                answers["late", who] = f"replayed {len(lf['days'])} day(s)"
                shutil.rmtree(target, ignore_errors=True)
        if "night_day" in ops:       # the aged side of night_day is the aged lake's night
            times["night_day", "aged"] = times["night", "aged"]
        print(f"  repeat {r + 1}: " + ", ".join(f"{op} {times[op, 'young'][-1]:.2f}/{times[op, 'aged'][-1]:.2f} s"
                                                for op in ops), flush=True)
    changed = [w for w, p in lakes.items() if fingerprint(p) != before[w]]

    labels = {"commit_cold": "watcher commit, cold (a child's first flush)",
              "commit_steady": f"watcher commit, steady (median of {WARM_COMMITS + 1}-"
                               f"{WARM_COMMITS + STEADY_COMMITS} in one process)",
              "night": f"nightly run of the next day ({aging.next})",
              "night_day": "  the same, young-day: a first day with a day's watcher commits",
              "sql": "sql count(*) of one day's findings",
              "query": "query findings_by_rule of one day",
              "verify": "verify --since an anchor of the night before",
              "verify_full": "verify of the whole lake (reference, no target)",
              "late": f"late 200-line file of {aging.late_day} (young: a lake of its own day)"}
    print(f"\naged: {args.nights} nights, {args.watcher_commits:,} watcher commits; young: 1 night "
          f"({aging.last}) + {YOUNG_COMMITS} watcher commits; young-day: "
          f"{commits_on(args.nights - 1, args.nights, args.watcher_commits)} watcher commits of {aging.last}, then "
          f"its night; median of {args.repeat}\n")
    print(f"{'operation':66}{'young s':>9}{'aged s':>9}{'aged/young':>12}{'target':>9}")
    for op in ops:
        y, a = statistics.median(times[op, "young"]), statistics.median(times[op, "aged"])
        target = LATE_TARGET if op == "late" else TARGET
        ratio = a / y if y > 0 else float("inf")
        if op == "verify_full":
            print(f"{labels[op]:66}{y:9.3f}{a:9.3f}{ratio:11.2f}x{'-':>9}")
            continue
        print(f"{labels[op]:66}{y:9.3f}{a:9.3f}{ratio:11.2f}x{'<= ' + format(target, '.2f'):>9}"
              f"  {'met' if ratio <= target else 'MISSED'}")
    print()
    for (op, who), text in sorted(answers.items()):
        print(f"  {op} answer, {who}: {text}")
    if changed:
        print(f"  NOTE: a read-only operation changed the {' and '.join(changed)} lake's files")

    print(f"\naged lake ({aging.aged}):")
    print(f"  {'table':10}{'commits':>9}{'_delta_log':>12}{'_log_archive':>14}{'data files':>12}{'on disk':>9}")
    for name, commits, log, archive, data, disk in size_facts(aging.aged):
        print(f"  {name:10}{commits:>9,}{log:>12,}{archive:>14,}{data:>12,}{disk:>9,}")

    st = aging.state
    nights = [s for _i, s in st["night_seconds"]]
    if nights:
        k = min(5, len(nights))
        print(f"\naging: nightly run {statistics.mean(nights):.1f} s a night (first {k} nights "
              f"{statistics.mean(nights[:k]):.1f} s, last {k} {statistics.mean(nights[-k:]):.1f} s)")
    if st["commit_seconds"]:
        total_c = sum(c for _i, c, _s in st["commit_seconds"])
        total_s = sum(s for _i, _c, s in st["commit_seconds"])
        per = [1000 * s / c for _i, c, s in st["commit_seconds"] if c]
        k = min(3, len(per))
        print(f"aging: watcher {total_s / total_c * 1000:.0f} s per 1,000 commits ({total_c:,} commits in "
              f"{total_s:.0f} s; first {k} days {statistics.mean(per[:k]):.0f} ms/commit, last {k} "
              f"{statistics.mean(per[-k:]):.0f} ms/commit)")
    if st.get("wall_seconds"):
        print(f"aging: {st['wall_seconds']:.0f} s of wall time in all ({st['wall_seconds'] / args.nights:.1f} s a "
              "night: the day's watcher commits, its run, the child processes' start, the simulation)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
