"""The three forms of the driver — the nightly batch, the live service, the Beam streaming form —
run over one input, and their rows (findings, rounds, packs: every column) in one comparable form.

Each runner is the real thing: ``run_batch`` (FnApiRunner) writing a lake; the live service's loop
(:class:`pitwatch.live.service.WatchService`, in this process, over device files, stdout to a
buffer, ``--finalize-at-stop``); ``ReplayLive`` under ``TestStream`` on the BundleBasedDirectRunner.
"""
from __future__ import annotations

import datetime as _dt
import io
import json
from pathlib import Path

import pyarrow as pa

from pitwatch.lake import Lake
from pitwatch.schemas.arrow import FINDINGS, PACKS, ROUNDS, RUN_STAMPS, rows_to_table

# every column of the three tables, but the batch run's first_seen_run / last_changed_run: the live forms
# have no run (their findings are the same findings, written by no run)
SCHEMAS = {"findings": pa.schema([f for f in FINDINGS if f.name not in RUN_STAMPS]), "rounds": ROUNDS, "packs": PACKS}


def _hashable(v):
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    return v


def canon(name: str, rows) -> list[tuple]:
    """Rows (dicts, any of the three forms) as sorted hashable tuples of every column of the table."""
    schema = SCHEMAS[name]
    table = rows if isinstance(rows, pa.Table) else rows_to_table(list(rows), schema)
    table = table.select(schema.names).cast(schema)
    return sorted((_hashable(r) for r in table.to_pylist()), key=repr)


def alert_rows(alerts: list[dict]) -> list[dict]:
    """Alerts (JSON objects) as finding rows: ``ts``, ``evidence_from`` and ``gaming_day`` parsed back."""
    def when(text):
        return None if text is None else _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))

    # live-only alerts (DEVICE_SILENT, CARD_DISAGREEMENT and its clearing) are no findings
    return [{**a, "ts": when(a["ts"]), "evidence_from": when(a.get("evidence_from")),
             "gaming_day": _dt.date.fromisoformat(a["gaming_day"])} for a in alerts if not a.get("live_only")]


def batch(inputs: list[str], lake: Path) -> dict[str, list[tuple]]:
    from pitwatch.lake.parquet import read_table
    from pitwatch.pipelines.batch import run_batch

    run_batch([str(i) for i in inputs], Lake.at(lake))
    return {name: canon(name, read_table(Lake.at(lake), name)) for name in SCHEMAS}


def live(inputs: list, state: Path) -> dict[str, list[tuple]]:
    """The live service over the device files of ``inputs`` (read as they are), closed at stop."""
    return live_run(inputs, state)[0]


def live_run(inputs: list, state: Path) -> tuple[dict[str, list[tuple]], dict]:
    """:func:`live` and the service's summary (its counts)."""
    from pitwatch.live.service import WatchOptions, WatchService

    out = io.BytesIO()
    svc = WatchService(WatchOptions(inputs=[str(i) for i in inputs], lake=Lake.at(state / "lake"), state_dir=str(state / "st"),
                                    stop_after_idle=0.3, finalize_at_stop=True, lake_alerts=False, redact=False,
                                    poll=0.01, checkpoint_every=3600), stdout=out)
    rows: dict[str, list] = {"rounds": [], "packs": []}

    def on_rows(_table_id, got) -> None:
        rows["rounds"] += got.rounds
        rows["packs"] += got.packs

    svc.engine.on_rows = on_rows
    summary = svc.run(install_signals=False)
    alerts = [json.loads(line) for line in out.getvalue().splitlines()]
    return ({"findings": canon("findings", alert_rows(alerts)),
             "rounds": canon("rounds", rows["rounds"]), "packs": canon("packs", rows["packs"])}, summary)


def _ts(line: str):
    from apache_beam.utils.timestamp import Timestamp

    try:
        when = _dt.datetime.fromisoformat(json.loads(line)["ts"].replace("Z", "+00:00"))
    except (ValueError, KeyError, TypeError):
        return Timestamp(0)
    return Timestamp.from_utc_datetime(when.astimezone(_dt.timezone.utc))


def beam_streaming(order: list[str], expected: dict[str, list[tuple]], half: int | None = None,
                   skip_rules: tuple = (), second_in_order: bool = False, refused: list | None = None) -> None:
    """Run ``ReplayLive`` over ``order`` (lines, in arrival order, each bundle reversed) and assert
    its rows equal ``expected`` (inside the pipeline: Beam's ``assert_that``).  ``half``: where the
    first bundle ends (default: the middle); ``skip_rules``: findings of these rules left out of
    both sides (the caller checks them); ``second_in_order``: the second bundle is not reversed;
    ``refused``: the (device_id, event_id) of the events the replay refuses (its ``rejects``)."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
    from apache_beam.testing.test_stream import TestStream
    from apache_beam.testing.util import assert_that, equal_to

    from pitwatch.live.beam import ReplayLive

    half = len(order) // 2 if half is None else half
    stream = TestStream()
    for n, chunk in enumerate((order[:half], order[half:])):
        # out of order across devices and within a bundle: the DoFns restore per-device order
        stream = stream.add_elements([beam.window.TimestampedValue(line.encode(), _ts(line))
                                      for line in (chunk if n and second_in_order else reversed(chunk))])
        if n == 0:   # a finite watermark first, correct: no later line is behind it
            stream = stream.advance_watermark_to(min(_ts(line) for line in order[half:]) - 1)
    # then past every hole wait (the held lines go on), then past the finalize delay (the tables
    # close), then the end: in steps, because the direct runner does not hold a step's timers back
    # until the step before has fired its own at the same watermark (a cluster runner does); the
    # finite steps also let the timers' rows reach the assertion before the end closes the window
    end = max(_ts(line) for line in order)
    stream = (stream.advance_watermark_to(end + 6).advance_watermark_to(end + 2 * 3600)
              .advance_watermark_to_infinity())
    options = PipelineOptions(["--runner=BundleBasedDirectRunner"])
    options.view_as(StandardOptions).streaming = True
    with beam.Pipeline(options=options) as p:
        out = p | stream | ReplayLive(wait_seconds=5.0, finalize_after_seconds=3600.0, with_rows=True)
        findings = (out["findings"] | "Kept" >> beam.Filter(lambda f: f.rule_id not in skip_rules)
                    | "FindingRows" >> beam.Map(lambda f: f.to_row()))
        if skip_rules:
            expected = {**expected, "findings": [r for r in expected["findings"]
                                                 if _rule_of(r) not in skip_rules]}
        for name, pcoll in (("findings", findings), ("rounds", out["rounds"]), ("packs", out["packs"])):
            canonical = (pcoll | f"Canon{name}" >> beam.Map(lambda row, n=name: canon(n, [row])[0]))
            assert_that(canonical, equal_to(expected[name]), label=f"Same{name}")
        if refused is not None:
            assert_that(out["rejects"] | "RefusedIds" >> beam.Map(lambda r: (r["device_id"], r["event_id"])),
                        equal_to(refused), label="SameRefused")


def _rule_of(row: tuple):
    """The rule_id of a canonical findings row."""
    return dict(row)["rule_id"]


def write_device_files(devices: dict[str, list[str]], folder: Path) -> None:
    """One plain ``<device>.jsonl`` per device, its lines in the given order."""
    folder.mkdir(parents=True, exist_ok=True)
    for dev, lines in devices.items():
        (folder / f"{dev}.jsonl").write_text("".join(line + "\n" for line in lines))


def without(rows: dict[str, list[tuple]], keep) -> dict[str, list[tuple]]:
    """``rows`` with only the findings ``keep(finding_row_dict)`` accepts (rounds, packs as they are)."""
    return {**rows, "findings": [r for r in rows["findings"] if keep(dict(r))]}


def assert_alerts_are_rows(alerts: list[dict], findings: list[tuple]) -> None:
    """Live alerts are the batch's finding rows, every column; the one listed difference allowed is
    the alert's texts masking shoe cards not yet dealt (``??``: docs/watch.md, "Cards not yet dealt")."""
    import re

    live = {dict(r)["finding_id"]: dict(r) for r in canon("findings", alert_rows(alerts))}
    batch = {dict(r)["finding_id"]: dict(r) for r in findings}
    assert sorted(live) == sorted(batch)
    for fid, row in batch.items():
        got = live[fid]
        for column in ("expected", "actual"):
            masked = re.escape(got[column]).replace(re.escape("??"), "[2-9TJQKA][cdhs]")
            assert re.fullmatch(masked, row[column]), (fid, column, got[column], row[column])
        assert {k: v for k, v in got.items() if k not in ("expected", "actual")} == {
            k: v for k, v in row.items() if k not in ("expected", "actual")}, fid
