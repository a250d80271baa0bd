"""Feed health live: the live engine runs SHOE_SILENT as the batch does (same finding_id), once the
table is finalized (a silent shoe never passes its pack); rules/feed_health.py, docs/watch.md."""
from __future__ import annotations

from pitwatch.live.engine import LiveEngine
from pitwatch.pipelines.replay import replay_table
from pitwatch.schemas.decode import GamingDayConfig
from tests.rules.test_feed_health import two_packs


def test_shoe_silent_live_has_the_batch_finding_id():
    _b, events = two_packs()
    engine = LiveEngine(GamingDayConfig())
    live = [f for ev in events for f in engine.feed(ev)]
    assert "SHOE_SILENT" not in {f.rule_id for f in live}     # the shoe never passed the silent pack
    live += engine.finalize()
    _rp, batch = replay_table("BAC-T", events, GamingDayConfig())
    assert [f.finding_id for f in live if f.rule_id == "SHOE_SILENT"] == \
        [f.finding_id for f in batch if f.rule_id == "SHOE_SILENT"] != []


# --- issue 28, the live part: the registry in `pitwatch watch`, DEVICE_SILENT -------------------------

import json  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import pytest  # noqa: E402

from pitwatch.lake import Lake  # noqa: E402
from tests.watch.conftest import ROOT, append_lines  # noqa: E402

SOURCE_OF = {"DT": "dealer", "SHOE": "shoe", "SHF": "shuffler"}


def _registry(path, scenario, leave_out: str) -> None:
    rows = ["device_id,source,table_id,from_day,to_day"]
    for dev in scenario:
        if dev != leave_out:
            rows.append(f"{dev},{SOURCE_OF[dev.split('-')[0]]},{dev.rsplit('-', 2)[-2]}-{dev.rsplit('-', 1)[-1]},,")
    path.write_text("\n".join(rows) + "\n")


def _batch_unknown(tmp_path, scenario, registry) -> list[str]:
    """UNKNOWN_DEVICE finding_ids of the real `pitwatch run --devices` over the same lines."""
    from pitwatch.lake.parquet import read_table
    from tests.watch.scenario import write_batch_input

    write_batch_input(scenario, tmp_path / "in")
    proc = subprocess.run([sys.executable, "-m", "pitwatch.cli", "run", str(tmp_path / "in"), "--lake",
                           str(tmp_path / "batch-lake"), "--devices", str(registry)],
                          cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    t = read_table(Lake.at(tmp_path / "batch-lake"), "findings")
    return sorted(f for f, r in zip(t.column("finding_id").to_pylist(), t.column("rule_id").to_pylist())
                  if r == "UNKNOWN_DEVICE")


@pytest.mark.slow
def test_unknown_device_fires_live_from_the_config_registry_as_in_the_batch(tmp_path, scenario, start_watch):
    registry = tmp_path / "devices.csv"
    _registry(registry, scenario, leave_out="SHOE-1-BAC-B")
    (tmp_path / "pitwatch.toml").write_text('devices = "devices.csv"\n')   # the config key, as `run` reads it
    feeds = tmp_path / "feeds"
    w = start_watch(feeds, "--lake", tmp_path / "lake", "--config", tmp_path / "pitwatch.toml",
                    "--finalize-at-stop")
    order = [(d, line) for d, lines in scenario.items() for line in lines]
    append_lines(feeds, order)
    w.caught_up(len(order))
    assert w.stop() == 0
    unknown = [a for a in w.alerts if a["rule_id"] == "UNKNOWN_DEVICE"]
    assert [a["device_id"] for a in unknown] == ["SHOE-1-BAC-B"]
    assert [a["finding_id"] for a in unknown] == _batch_unknown(tmp_path, scenario, registry)


@pytest.mark.slow
def test_a_watcher_given_no_registry_uses_the_lakes(tmp_path, scenario, start_watch):
    """rules.md 2.1: the registry a run used is kept in the lake and used by `watch` unless a new
    one is given: the nightly lake's registry raises the batch's UNKNOWN_DEVICE live."""
    registry = tmp_path / "devices.csv"
    _registry(registry, scenario, leave_out="SHOE-1-BAC-B")
    batch = _batch_unknown(tmp_path, scenario, registry)
    feeds = tmp_path / "feeds"
    w = start_watch(feeds, "--lake", tmp_path / "batch-lake", "--finalize-at-stop")
    order = [(d, line) for d, lines in scenario.items() for line in lines]
    append_lines(feeds, order)
    w.caught_up(len(order))
    assert w.stop() == 0
    assert any("device registry: the lake's version 1" in e for e in w.errors)
    assert [a["finding_id"] for a in w.alerts if a["rule_id"] == "UNKNOWN_DEVICE"] == batch != []


@pytest.mark.slow
def test_a_registry_given_to_a_watcher_is_the_lakes_next_version(tmp_path, scenario, start_watch):
    from pitwatch.lake import runs

    registry = tmp_path / "devices.csv"
    _registry(registry, scenario, leave_out="SHOE-1-BAC-B")
    lake, feeds = tmp_path / "lake", tmp_path / "feeds"
    w = start_watch(feeds, "--lake", lake, "--devices", registry, "--finalize-at-stop")
    order = [(d, line) for d, lines in scenario.items() for line in lines]
    append_lines(feeds, order)
    w.caught_up(len(order))
    assert w.stop() == 0
    named = [json.loads(r["options"]).get("devices") for r in runs.records_newest_first(Lake.at(lake))]
    named = [d for d in named if d is not None]
    assert len(named) == 1 and named[0]["version"] == 1 and named[0]["from"] == "given"
    assert (lake / named[0]["kept"]).read_bytes() == registry.read_bytes()
    assert [line.split(",")[0] for line in (lake / named[0]["kept"]).read_text().splitlines()[1:]] == \
        [dev for dev in scenario if dev != "SHOE-1-BAC-B"]
    # a later run given none uses it (the watcher's record found among its records, the others unread)
    from tests.watch.scenario import write_batch_input

    write_batch_input(scenario, tmp_path / "in")
    proc = subprocess.run([sys.executable, "-m", "pitwatch.cli", "run", str(tmp_path / "in"), "--lake", str(lake)],
                          cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"registry    device registry: the lake's version 1 ({named[0]['kept']}" in proc.stdout


def test_a_missing_registry_is_one_error_line_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pitwatch.cli", "watch", str(tmp_path), "--lake",
                           str(tmp_path / "lake"), "--devices", str(tmp_path / "nope.csv")],
                          cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                          capture_output=True, timeout=60)
    assert proc.returncode == 2
    err = proc.stderr.decode().strip().splitlines()
    assert err == [f"Error: device registry {tmp_path / 'nope.csv'}: no such file"]
    assert not (tmp_path / "lake" / "_watch").exists()


@pytest.mark.slow     # a real watch process left to see the shoe fall silent
def test_a_shoe_silent_while_its_table_plays_is_announced_once(tmp_path, scenario, start_watch):
    """DEVICE_SILENT (pitwatch.live.silence): the shoe stops, the terminal goes on; one notice on stderr
    and one info alert (stdout, the alerts file; not the lake: it is no finding)."""
    feeds, lake = tmp_path / "feeds", tmp_path / "lake"
    dealer, shoe = scenario["DT-1-BAC-A"], scenario["SHOE-1-BAC-A"]
    w = start_watch(feeds, "--lake", lake, "--silence-after", "1", "--alerts-file", tmp_path / "alerts.jsonl",
                    "--checkpoint-every", "0.05")
    append_lines(feeds, [("SHOE-1-BAC-A", x) for x in shoe[:8]] + [("DT-1-BAC-A", x) for x in dealer[:20]])
    w.caught_up(28)
    time.sleep(1.5)                               # the watcher's clock: nothing from the shoe since
    quiet_since = json.loads(shoe[7])["ts"]
    later = [x for x in dealer[20:] if json.loads(x)["ts"] > quiet_since[:17] + "59"]   # > 1 s later
    append_lines(feeds, [("DT-1-BAC-A", x) for x in later[:30]])
    w.caught_up(28 + 30)
    notices = [a for a in w.alerts if a["rule_id"] == "DEVICE_SILENT"]
    assert [(a["device_id"], a["severity"], a["table_id"]) for a in notices] == [("SHOE-1-BAC-A", "info", "BAC-A")]
    assert sum("DEVICE_SILENT" in e and "SHOE-1-BAC-A" in e for e in w.errors) == 1
    append_lines(feeds, [("DT-1-BAC-A", x) for x in later[30:]])     # still silent: not announced again
    w.caught_up(28 + len(later))
    assert w.stop(signal.SIGTERM) == 0
    assert len([a for a in w.alerts if a["rule_id"] == "DEVICE_SILENT"]) == 1
    with open(tmp_path / "alerts.jsonl") as f:
        assert [json.loads(x)["rule_id"] for x in f].count("DEVICE_SILENT") == 1
    assert _lake_rules(lake).count("DEVICE_SILENT") == 1            # in the table too, once (live_only)


def _lake_rules(lake) -> list:
    import pyarrow as pa
    import pyarrow.dataset as ds

    part = ds.partitioning(pa.schema([("gaming_day", pa.date32())]), flavor="hive")
    return ds.dataset(str(lake / "alerts"), format="parquet", partitioning=part).to_table().column("rule_id").to_pylist()
