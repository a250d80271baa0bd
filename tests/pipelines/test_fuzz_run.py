"""Fuzz: a seeded mutator writes thousands of damaged lines into a simulated day; ``pitwatch run`` copes.

A simulated floor (``pitwatch simulate``: two tables, one hour, a clean day)
gets, by a seeded mutator of its own, lines with wrong types, truncations,
huge values, bad UTF-8, bad timestamps, pathological nesting, lines that are
not objects, exact re-deliveries, conflicting copies, a byte-order mark, CRLF
line ends, blank lines, reordered keys and unknown fields.  Each mutation's
fate is known (rejected, a duplicate, a conflict, accepted), so the run must
give exactly the expected counts: exit 0, read = accepted + rejected +
duplicates, the expected number of rejects, no ``internal error``; and a
rerun over the same input writes byte-identical lake files.
"""
from __future__ import annotations

import json
import pathlib
import random
import subprocess
import sys

import pytest

from tests import lake_rows

SEED = 23
MUTATED = 3000


def _simulate(out: pathlib.Path) -> None:
    subprocess.run([sys.executable, "-m", "pitwatch.cli", "simulate", "--out", str(out), "--tables",
                    "baccarat=2,three_bet_poker=1", "--hours", "1", "--workers", "1", "-q"],
                   check=True, capture_output=True, timeout=300)


def _reject_mutation(rng: random.Random, raw: bytes) -> bytes:
    """``raw`` (a valid line) made into a line the contract rejects, by one of many means."""
    obj = json.loads(raw)
    kind = rng.choice(["wrong_type", "truncate", "huge", "utf8", "ts", "deep", "nan", "not_object", "long_id",
                       "unknown_type", "horizon"])
    if kind == "wrong_type":
        field, value = rng.choice([("seq", str(obj["seq"])), ("table_id", 7), ("type", {"a": 1}), ("type", [1]),
                                   ("device_id", None), ("ts", 1700000000), ("source", ["shoe"])])
        obj[field] = value
        return json.dumps(obj).encode()
    if kind == "truncate":
        return raw[: rng.randrange(1, len(raw) - 1)]
    if kind == "huge":
        text = json.dumps(obj)
        value = rng.choice(["18446744073709551615", "9223372036854775808", "1e300"])
        return text.replace(f'"seq": {obj["seq"]}', f'"seq": {value}', 1).encode()
    if kind == "utf8":
        obj["event_id"] = obj["event_id"] + "@@"
        return json.dumps(obj).encode().replace(b"@@", rng.choice([b"\xff\xfe", b"\xc3", b"\xed\xa0\x80"]))
    if kind == "ts":
        obj["ts"] = rng.choice(["0001-01-01T00:00:00Z", "9999-12-31T23:59:59-23:59", "9999-12-31T00:00:00Z",
                                "1969-12-31T23:59:59Z", "2026-02-30T20:00:00Z", "2026-11-28 20:00:00"])
        return json.dumps(obj).encode()
    if kind == "deep":
        depth = rng.choice([65, 1000, 10_000])
        return json.dumps(obj).encode()[:-1] + b', "x": ' + b"[" * depth + b"]" * depth + b"}"
    if kind == "nan":
        return json.dumps({**obj, "seq": float(rng.choice(["nan", "inf", "-inf"]))}).encode()
    if kind == "not_object":
        return rng.choice([b"null", b"[1]", b"42", b'"text"', b"true"])
    if kind == "long_id":
        obj["event_id"] = "e" * 129
        return json.dumps(obj).encode()
    if kind == "unknown_type":
        obj["type"] = "card_teleported"
        return json.dumps(obj).encode()
    obj["ts"] = "2026-12-05T12:00:00Z"      # horizon: more than 2 days after --not-after 2026-11-28
    return json.dumps(obj).encode()


def _accepted_variant(rng: random.Random, raw: bytes) -> bytes:
    obj = json.loads(raw)
    if rng.random() < 0.5:
        obj = dict(rng.sample(list(obj.items()), len(obj)))        # keys in another order
    else:
        obj["firmware"] = rng.choice(["4.2", {"build": [1, 2]}, None])
    return json.dumps(obj, separators=rng.choice([(",", ":"), (", ", ": ")])).encode()


def mutate_day(folder: pathlib.Path, seed: int = SEED) -> dict[str, int]:
    """Mutate every file of a simulated day in place; returns the counts a run must give."""
    rng = random.Random(seed)
    files = sorted(folder.glob("*.jsonl"))
    contents = {f: f.read_bytes().splitlines() for f in files}
    every = [(f, i) for f in files for i in range(len(contents[f]))]
    chosen = rng.sample(every, MUTATED)
    expected = {"read": len(every), "rejected": 0, "duplicates": 0}
    extra: dict[pathlib.Path, list[bytes]] = {f: [] for f in files}
    for f, i in chosen:
        raw = contents[f][i]
        fate = rng.random()
        if fate < 0.55:
            contents[f][i] = _reject_mutation(rng, raw)
            expected["rejected"] += 1
        elif fate < 0.70:       # an exact re-delivery, maybe with other spacing and key order, in any file
            extra[rng.choice(files)].append(_same_json(rng, raw))
            expected["read"] += 1
            expected["duplicates"] += 1
        elif fate < 0.80:       # a copy with other content: every copy is rejected
            obj = json.loads(raw)
            other = rng.choice(["2026-11-28T23:59:59.999Z", "2026-11-28T23:59:58.999Z"])
            obj["ts"] = other if obj["ts"] != other else "2026-11-28T23:59:57.999Z"
            extra[rng.choice(files)].append(json.dumps(obj).encode())
            expected["read"] += 1
            expected["rejected"] += 2
        else:
            contents[f][i] = _accepted_variant(rng, raw)
    for f in files:
        lines = contents[f] + extra[f]
        for _ in range(rng.randrange(0, 4)):        # blank lines: skipped, not counted
            lines.insert(rng.randrange(len(lines) + 1), rng.choice([b"", b"   ", b"\t"]))
        end = b"\r\n" if rng.random() < 0.5 else b"\n"
        data = end.join(lines) + end
        if rng.random() < 0.5:
            data = b"\xef\xbb\xbf" + data if lines[0].strip() else data
        f.write_bytes(data)
    return expected


def _same_json(rng: random.Random, raw: bytes) -> bytes:
    obj = json.loads(raw)
    return json.dumps(dict(rng.sample(list(obj.items()), len(obj))), separators=(",", ":")).encode()


def _run(day: pathlib.Path, lake: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pitwatch.cli", "run", str(day), "--lake", str(lake),
                           "--not-after", "2026-11-28", "--quiet"], capture_output=True, text=True, timeout=600)


def _lake_files(lake: pathlib.Path) -> dict[str, bytes]:
    return lake_rows.data_files(lake)


@pytest.mark.slow
def test_a_fuzzed_day_runs_to_the_end_with_its_accounting_intact(tmp_path):
    _simulate(tmp_path / "sim")
    day = tmp_path / "sim" / "2026-11-28"
    expected = mutate_day(day)
    assert expected["rejected"] > 1000 and expected["duplicates"] > 200
    lake = tmp_path / "lake"
    first = _run(day, lake)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "Traceback" not in first.stderr
    run = lake_rows.last_run(lake)
    assert run["status"] == "succeeded"
    assert (run["lines_read"], run["rejected"], run["duplicates"]) == \
        (expected["read"], expected["rejected"], expected["duplicates"])
    assert run["lines_read"] == run["accepted"] + run["rejected"] + run["duplicates"]
    assert run["damaged_files"] == 0 and json.loads(run["options"])["not_after"] == "2026-11-28"
    rejects = lake_rows.dicts(lake, "rejects")
    assert len(rejects) == expected["rejected"]
    assert all(r["reason"] and not r["reason"].startswith("internal error") for r in rejects)
    assert sum(r["reason"].startswith("conflicting duplicate") for r in rejects) % 2 == 0
    assert lake_rows.table(lake, "events").num_rows == run["accepted"]
    files = _lake_files(lake)
    again = _run(day, lake)
    assert again.returncode == 0, again.stderr[-3000:]
    assert _lake_files(lake) == files, "a rerun over the same input writes byte-identical files"


def test_the_mutator_is_seeded(tmp_path):
    counts = {}
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        for k in range(3):
            (folder / f"D{k}.jsonl").write_bytes(b"\n".join(
                json.dumps({"event_id": f"e{k}-{i}", "seq": i, "ts": "2026-11-28T20:00:00Z"}).encode()
                for i in range(2000)) + b"\n")
        counts[name] = mutate_day(folder)
    assert counts["a"] == counts["b"]
    assert [p.read_bytes() for p in sorted((tmp_path / "a").iterdir())] == \
        [p.read_bytes() for p in sorted((tmp_path / "b").iterdir())]
