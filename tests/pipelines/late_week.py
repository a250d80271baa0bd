"""A simulated week: seven gaming days of a short session each, made one floor (:func:`simulate_week`,
also the analyst's week of tests/pipelines/test_analyst_week.py); for the late-file tests
(tests/pipelines/test_late_files.py, :func:`build`) every fault kind, and a copy of the first day's baccarat table dealt again
two days later at another table, so that its packs repeat across two tables (UNSHUFFLED_SEQUENCE
from the carried pack index)."""
from __future__ import annotations

import csv
import datetime as _dt
import json
import pathlib
import shutil

START = _dt.datetime(2026, 11, 28, 20, 0, tzinfo=_dt.timezone.utc)
DAYS = [(START + _dt.timedelta(days=k)).date().isoformat() for k in range(7)]


def build(base: pathlib.Path) -> pathlib.Path:
    """``base/inbox``: one folder per day, ``devices.csv`` the sessions' registries merged."""
    from pitwatch.simulator import SPECS

    inbox, registry = simulate_week(base, {"baccarat": 1, "three_bet_poker": 1}, 0.75,
                                    lambda k: {name: 0.05 for name in SPECS})
    _repeat_at_another_table(inbox, DAYS[0], DAYS[2], registry)
    write_registry(inbox, registry)
    return inbox


def simulate_week(base: pathlib.Path, tables: dict[str, int], hours: float, faults_of,
                  seed: int = 40) -> tuple[pathlib.Path, dict[str, list[str]]]:
    """One simulated session of ``hours`` per day of :data:`DAYS` (night ``k``: seed ``seed + k``, the
    faults ``faults_of(k)``), made one floor (:func:`_ids_of_session`) in ``base/inbox/<day>/``; each
    session's ground truth, its ids renamed as its events', in ``base/truth/<day>.jsonl``, its
    ``hold_skew.json`` as ``base/truth/<day>-hold_skew.json``, the dealers of every session in
    ``base/inbox/dealers.csv`` (the roster a casino drops in the inbox).  Returns the inbox and the
    device registry of every session's devices (written by :func:`write_registry`)."""
    from pitwatch.simulator import simulate

    inbox, truth_dir = base / "inbox", base / "truth"
    inbox.mkdir(parents=True)
    truth_dir.mkdir()
    registry: dict[str, list[str]] = {}
    canonical: dict[tuple, str] = {}     # (source, table) -> the floor's device for it, from day one
    last_seq: dict[str, int] = {}
    dealers: dict[str, list[str]] = {}
    for k, day in enumerate(DAYS):
        session = base / f"session-{k}"
        simulate(session, tables=tables, hours=hours, start=START + _dt.timedelta(days=k), seed=seed + k,
                 faults=faults_of(k))
        shutil.move(str(session / day), str(inbox / day))
        with open(session / "devices.csv", newline="") as f:
            rows = list(csv.reader(f))
        registry.setdefault("", rows[0])
        same = {}
        for row in rows[1:]:
            device = canonical.setdefault((row[1], row[2]), row[0])
            same[row[0]] = device
            registry.setdefault(device, row)
        _ids_of_session(inbox / day, k, same, last_seq)
        truth = [json.loads(raw) for raw in (session / "truth.jsonl").read_text().splitlines()]
        with open(truth_dir / f"{day}.jsonl", "w") as f:
            f.writelines(json.dumps(_renamed(row, k, same)) + "\n" for row in truth)
        if (session / "hold_skew.json").exists():
            shutil.move(str(session / "hold_skew.json"), str(truth_dir / f"{day}-hold_skew.json"))
        with open(session / "dealers.csv", newline="") as f:
            roster = list(csv.reader(f))
        dealers.setdefault("", roster[0])
        for row in roster[1:]:
            dealers.setdefault(row[0], row)
        shutil.rmtree(session)
    with open(inbox / "dealers.csv", "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([dealers.pop(""), *sorted(dealers.values())])
    return inbox, registry


def write_registry(inbox: pathlib.Path, registry: dict[str, list[str]]) -> None:
    """``inbox/devices.csv``: the header (``registry[""]``) and every device's row."""
    rows = dict(registry)
    header = rows.pop("")
    with open(inbox / "devices.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(sorted(rows.values()))


def _renamed(row: dict, k: int, same: dict) -> dict:
    """A truth line of session ``k`` with the ids its events got (:func:`_ids_of_session`)."""
    row = dict(row)
    for key in ("round_id", "pack_id"):
        if row.get(key):
            head, _, tail = row[key].rpartition("-")
            row[key] = f"{head}-{k}{tail}"
    if row.get("device_id"):
        row["device_id"] = same.get(row["device_id"], row["device_id"])
    return row


def _ids_of_session(folder: pathlib.Path, k: int, same: dict, last_seq: dict) -> None:
    """One floor across the sessions: each session numbers its rounds and packs from 1 (the day's
    number goes in front, so that a day's rounds and packs are not the day before's) and has devices
    of its own (each is the floor's device for its table and kind, its ``seq`` going on from the day
    before's, the session's own gaps kept)."""
    for path in sorted(folder.glob("*.jsonl")):
        events = [json.loads(raw) for raw in path.read_text().splitlines()]
        device = same.get(events[0]["device_id"], events[0]["device_id"])
        first = min(ev["seq"] for ev in events)
        base = last_seq.get(device, first - 1) + 1
        for ev in events:
            for key in ("round_id", "pack_id"):
                if key in ev:
                    head, _, tail = ev[key].rpartition("-")
                    ev[key] = f"{head}-{k}{tail}"
            ev["device_id"] = device
            ev["seq"] = ev["seq"] - first + base
        last_seq[device] = max(ev["seq"] for ev in events)
        path.unlink()
        (folder / f"{device}.jsonl").write_text("\n".join(json.dumps(ev, separators=(",", ":")) for ev in events) + "\n")


def _repeat_at_another_table(inbox: pathlib.Path, day: str, later: str, registry: dict) -> None:
    """BAC-01's shoe and terminal files of ``day`` dealt again on ``later`` at table BAC-09 (new
    devices, times moved on by the days between): its packs repeat BAC-01's."""
    shift = _dt.date.fromisoformat(later) - _dt.date.fromisoformat(day)
    for path in sorted((inbox / day).glob("*.jsonl")):
        lines = []
        for raw in path.read_text().splitlines():
            ev = json.loads(raw)
            if ev.get("table_id") != "BAC-01" or ev["source"] not in ("shoe", "dealer"):
                continue
            ts = _dt.datetime.fromisoformat(ev["ts"].replace("Z", "+00:00")) + shift
            ev["ts"] = ts.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            ev["table_id"] = "BAC-09"
            ev["device_id"] = ev["device_id"].replace("BAC01", "BAC09") + ("" if "BAC" in ev["device_id"] else "9")
            for key in ("pack_id", "round_id"):
                if key in ev:
                    ev[key] = ev[key].replace("BAC01", "BAC09").replace("BAC-01", "BAC-09")
            lines.append(json.dumps(ev, separators=(",", ":")))
        if lines:
            device = json.loads(lines[0])["device_id"]
            (inbox / later / f"{device}.jsonl").write_text("\n".join(lines) + "\n")
            source = json.loads(lines[0])["source"]
            registry[device] = [device, source, "BAC-09", later, ""]
