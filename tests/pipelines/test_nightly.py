"""Nightly continuity: day-by-day runs give the findings and rows of one long run.

The clean example (07:00-09:15 UTC) is split at an 08:00 cutoff into two
gaming days, so baccarat shoes, stub-count windows and open rounds run across
the cutoff; faults are injected on both sides of it.
"""
from __future__ import annotations

import json
import pathlib

import orjson
import pytest
from click.testing import CliRunner

from pitwatch.cli import main
from pitwatch.lake import Lake
from pitwatch.schemas.decode import GamingDayConfig, decode_line
from tests import lake_rows
from tests.data import clean_floor_lines

CUTOFF = "08:00"


def _faulty_floor() -> list[bytes]:
    """The example with faults: a cut too shallow (day 1), a lost shoe event (day 2), a
    stud burn skipped across the cutoff, a wrong payout (day 2)."""
    out = []
    dropped_seq = False
    for raw in clean_floor_lines():
        ev = json.loads(raw)
        if ev["type"] == "cut" and ev["table_id"] == "BAC-01" and ev.get("pack_id") == "P-BAC01-01":
            ev["position"] = 30                                          # CUT_PLACEMENT, day 1
        if (ev["type"] == "card_drawn" and ev["table_id"] == "BAC-01" and ev["ts"] > "2026-11-28T08:30"
                and not dropped_seq):
            dropped_seq = True                                           # SEQ_GAP (+ unaccounted card), day 2
            continue
        if ev["type"] == "payout" and ev["table_id"] == "BAC-01" and ev["ts"] > "2026-11-28T08:40" \
                and ev["result"] == "win" and "paid" not in str(ev.get("note")):
            ev["amount"] = ev["amount"] + 1                              # PAYOUT, day 2
            ev["note"] = "paid"
        out.append(json.dumps(ev).encode())
    return out


def _write_inbox(inbox: pathlib.Path, lines: list[bytes]) -> None:
    cfg = GamingDayConfig(cutoff=CUTOFF)
    files: dict[pathlib.Path, list[bytes]] = {}
    for i, raw in enumerate(lines, 1):
        ev, _ = decode_line(raw, "x", i, cfg)
        files.setdefault(inbox / str(ev.gaming_day) / f"{ev.device_id}.jsonl", []).append(raw)
    for path, rows in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\n".join(rows) + b"\n")


def _invoke(*args):
    result = CliRunner().invoke(main, ["run", *map(str, args), "--cutoff", CUTOFF, "--quiet"])
    assert result.exit_code == 0, result.output
    return result


def _rows(lake, table, exclude=None) -> list[tuple]:
    """Whole rows of ``table``, but the ``exclude`` clause's columns (default: those naming the lake's runs,
    which two lakes never share: ``lake_rows.RUN_NAMED``)."""
    if exclude is None:
        named = lake_rows.RUN_NAMED.get(table)
        exclude = f"exclude ({', '.join(named)})" if named else ""
    con = lake_rows.connection(lake)
    return con.execute(f"select * {exclude} from {table}"
                       " order by all").fetchall()


@pytest.fixture(scope="module")
def floors(tmp_path_factory):
    base = tmp_path_factory.mktemp("nightly")
    lines = _faulty_floor()
    (base / "all.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    _write_inbox(base / "inbox", lines)
    _invoke(base / "all.jsonl", "--lake", base / "single")
    for day in ("2026-11-27", "2026-11-28"):
        _invoke("--day", day, "--inbox", base / "inbox", "--lake", base / "nightly")
    return base


@pytest.mark.slow
def test_day_by_day_equals_one_long_run(floors):
    single = _rows(floors / "single", "findings")
    assert {r[1] for r in single} >= {"CUT_PLACEMENT", "SEQ_GAP", "PAYOUT"}
    assert _rows(floors / "nightly", "findings") == single
    for table in ("rounds", "packs"):
        assert _rows(floors / "nightly", table) == _rows(floors / "single", table)
    assert _rows(floors / "nightly", "events", "exclude (file, line)") == \
        _rows(floors / "single", "events", "exclude (file, line)")


@pytest.mark.slow
def test_rounds_crossing_the_cutoff_belong_to_the_day_they_started(floors):
    days = lake_rows.connection(floors / "nightly").execute("""select min(gaming_day)::varchar, max(gaming_day)::varchar
        from rounds
        where started < timestamp '2026-11-28 08:00:00+00' and ended >= timestamp '2026-11-28 08:00:00+00'""").fetchone()
    assert days == ("2026-11-27", "2026-11-27")


@pytest.mark.slow
def test_rerunning_a_day_is_idempotent(floors, tmp_path):
    lake = floors / "nightly"
    before = lake_rows.data_files(lake)
    _invoke("--day", "2026-11-28", "--inbox", floors / "inbox", "--lake", lake)
    after = lake_rows.data_files(lake)
    assert after == before


@pytest.mark.slow
def test_a_late_file_corrects_the_earlier_day(floors, tmp_path):
    import shutil

    inbox, lake = tmp_path / "inbox", tmp_path / "lake"
    shutil.copytree(floors / "inbox", inbox)
    late = inbox / "2026-11-27" / "DT-BAC01.jsonl"
    held_back = late.read_bytes()
    late.unlink()                                        # the terminal's day-1 file arrives late
    _invoke("--day", "2026-11-27", "--inbox", inbox, "--lake", lake)
    _invoke("--day", "2026-11-28", "--inbox", inbox, "--lake", lake)
    assert _rows(lake, "findings") != _rows(floors / "single", "findings")
    late.write_bytes(held_back)                           # uploaded the next night
    _invoke("--day", "2026-11-28", "--inbox", inbox, "--lake", lake)
    assert _rows(lake, "findings") == _rows(floors / "single", "findings")
    assert _rows(lake, "rounds") == _rows(floors / "single", "rounds")


@pytest.mark.slow
def test_exit_codes_for_a_scheduler(floors, tmp_path):
    ok = CliRunner().invoke(main, ["run", "--day", "2026-11-27", "--inbox", str(floors / "inbox"),
                                   "--lake", str(tmp_path / "lake"), "--cutoff", CUTOFF, "--quiet"])
    assert ok.exit_code == 0, ok.output
    fail = CliRunner().invoke(main, ["run", "--day", "2026-11-27", "--inbox", str(floors / "inbox"),
                                     "--lake", str(tmp_path / "lake"), "--cutoff", CUTOFF, "--quiet",
                                     "--fail-on", "major"])
    assert fail.exit_code == 1 and "1 finding of severity major or higher" in fail.output
    bad = CliRunner().invoke(main, ["run", "--day", "28/11/2026", "--inbox", str(floors / "inbox"),
                                    "--lake", str(tmp_path / "lake")])
    assert bad.exit_code == 2 and bad.output == "Error: --day must be a date YYYY-MM-DD, got '28/11/2026'\n"
    missing = CliRunner().invoke(main, ["run", "--day", "2026-11-27", "--lake", str(tmp_path / "lake")])
    assert missing.exit_code == 2 and missing.output == "Error: --day needs --inbox DIR\n"


@pytest.mark.slow
def test_a_state_from_another_format_fails_clearly(floors, tmp_path):
    import shutil

    lake = tmp_path / "lake"
    shutil.copytree(floors / "nightly", lake)
    import pyarrow.parquet as pq

    # the day's manifest (a row of the state table) as a pitwatch of another state format wrote it
    manifest = next((lake / "state" / "gaming_day=2026-11-27").glob("*-manifest.parquet"))
    rows = pq.read_table(manifest).to_pylist()
    rows[0]["payload"] = json.dumps({**json.loads(rows[0]["payload"]), "format": 999})
    pq.write_table(pq.read_table(manifest).from_pylist(rows, schema=pq.read_schema(manifest)), manifest)
    result = CliRunner().invoke(main, ["run", "--day", "2026-11-28", "--inbox", str(floors / "inbox"),
                                       "--lake", str(lake), "--cutoff", CUTOFF, "--quiet"])
    assert result.exit_code == 2
    assert result.output.startswith("Error: the state of gaming day 2026-11-27 was written by pitwatch")


@pytest.mark.slow
def test_simulated_days_night_by_night_equal_one_run(tmp_path):
    """Two simulated gaming days of every game, faults of every kind, shoes and stub
    windows across the cutoff; night by night equals one run over both days."""
    from pitwatch.simulator import SPECS, simulate

    feeds = tmp_path / "inbox"
    simulate(feeds, tables={"baccarat": 1, "three_bet_poker": 1, "combate": 1, "razz": 1},
             hours=12, seed=9, faults={name: 0.03 for name in SPECS})
    days = sorted(d.name for d in feeds.iterdir() if d.is_dir())
    assert len(days) >= 2
    # the nightly form reads the simulator's registry as INBOX/devices.csv: the one run gets it too
    result = CliRunner().invoke(main, ["run", *[str(feeds / d) for d in days], "--lake", str(tmp_path / "single"),
                                       "--devices", str(feeds / "devices.csv"), "--quiet"])
    assert result.exit_code == 0, result.output
    for day in days:
        result = CliRunner().invoke(main, ["run", "--day", day, "--inbox", str(feeds), "--lake",
                                           str(tmp_path / "nightly"), "--quiet"])
        assert result.exit_code == 0, result.output
    single = _rows(tmp_path / "single", "findings")
    assert len({r[1] for r in single}) >= 10
    assert _rows(tmp_path / "nightly", "findings") == single
    assert _rows(tmp_path / "nightly", "rounds") == _rows(tmp_path / "single", "rounds")
    assert _rows(tmp_path / "nightly", "packs") == _rows(tmp_path / "single", "packs")


def test_a_repeat_is_raised_the_night_its_second_pack_completes():
    """003 4.1: pack B repeats pack A's run; A (an unshuffled pack) completes a night after B."""
    from pitwatch.pipelines.coders import pack_bytes
    from pitwatch.pipelines.graph import DayPlan
    from pitwatch.pipelines.replay import NO_PACK_CARDS, FindRepeatedRuns
    from pitwatch.rules.repeated_runs import RunKeys

    cards = ["6d", "5d", "5h", "4d", "Qc", "Qs", "8c", "4c", "4h", "2d", "As"]

    def pack(pack_id, first_ts):
        return {"table_id": "TBP-01", "pack_id": pack_id, "game": "three_bet_poker", "first_ts": first_ts,
                "source": "shoe", "cards": [[i + 1, c, f"{pack_id}-{i}", first_ts + i] for i, c in enumerate(cards)]}

    ts = 1_795_911_461_372_000
    earlier, later = pack("P-A", ts), pack("P-B", ts + 60_000_000)
    step = FindRepeatedRuns(GamingDayConfig(), DayPlan("2026-11-29", "2026-11-28", run_id="r"))
    prior = [_state_row(later)]                      # B completed last night, alone: nothing to compare
    tonight = (RunKeys.of([earlier]).to_bytes(), pack_bytes(orjson.dumps([earlier])))   # as a table's replay hands it out
    out = [o for o in step.process((None, [tonight, NO_PACK_CARDS]), [], prior) if not hasattr(o, "tag")]
    rows = [r for (_name, _day), table in out for r in table.to_pylist()]
    assert [(r["rule_id"], r["pack_id"]) for r in rows] == [("UNSHUFFLED_SEQUENCE", "P-B")]
    again = [o for o in step.process((None, [NO_PACK_CARDS]), [], [_state_row(earlier), _state_row(later)])
             if not hasattr(o, "tag")]
    assert again == []                                 # raised once, not again the next night


def _state_row(record: dict) -> dict:
    """A carried pack as the step gets it from the state table (``pitwatch.lake.state``): its record
    as the step wrote it, beside its table, pack and first ts."""
    return {"table_id": record["table_id"], "pack_id": record["pack_id"], "first_ts": record.get("first_ts"),
            "record": json.dumps(record, sort_keys=True)}


def _repeat_check_by_its_definition(step, carried, tonight, fired):
    """What the nightly repeat check gives, from its definition rather than its code: the carried
    packs still in the window and tonight's go back to the state, each record as
    ``json.dumps(…, sort_keys=True)``; a repeat among all of them is raised unless the carried
    packs alone raised it on an earlier night, or the pack's own replay fired it."""
    import datetime as _dt

    from pitwatch.pipelines.replay import TAG_STATE, finding_rows, split_by_day
    from pitwatch.rules.finding import gaming_day_from_config
    from pitwatch.rules.repeated_runs import repeated_runs
    from pitwatch.schemas.arrow import FINDINGS, rows_to_table

    gaming_day = gaming_day_from_config(step.gaming_day_config)
    oldest = _dt.date.fromisoformat(step.day_mode.replay_day) - _dt.timedelta(days=step.day_mode.retention_days)
    prior = [r for r in carried if r.get("first_ts") is None or gaming_day(r["first_ts"]) > oldest]
    raised_before = {f.finding_id for f in repeated_runs(prior, gaming_day)}
    findings = [f for f in repeated_runs(prior + tonight, gaming_day)
                if f.finding_id not in raised_before and (f.table_id, f.pack_id) not in set(fired)]
    found = [(name, day, table.to_pylist())
             for (name, day), table in split_by_day("findings", rows_to_table(finding_rows(findings), FINDINGS))]
    state = [(TAG_STATE, ("pack_cards", {"table_id": r["table_id"], "pack_id": r["pack_id"], "first_ts": r.get("first_ts"),
                                         "record": json.dumps(r, sort_keys=True)})) for r in prior + tonight]
    return found, state


def test_the_repeat_check_over_a_week_of_carried_packs_gives_what_it_gave_row_for_row():
    """The carried packs are filtered on their state row, parsed once and handed on as they came
    (issue 35): the findings and the state rows the check's definition gives, row for row."""
    import random

    from pitwatch.lake import state
    from pitwatch.pipelines.coders import pack_bytes, unpack
    from pitwatch.pipelines.graph import DayPlan
    from pitwatch.pipelines.replay import NO_PACK_CARDS, FindRepeatedRuns
    from pitwatch.rules.repeated_runs import RunKeys

    deck = [r + s for s in "cdhs" for r in "23456789TJQKA"]
    rng = random.Random(35)
    runs_of = [rng.sample(deck, 12) for _ in range(4)]          # runs some packs share

    def pack(table, pack_id, first_ts, shared):
        cards = rng.sample(deck, 40) + (runs_of[shared] if shared is not None else [])
        return {"table_id": table, "pack_id": pack_id, "game": "three_bet_poker", "first_ts": first_ts,
                "source": "shoe", "cards": [[i + 1, c, f"{pack_id}-{i}", first_ts + i] for i, c in enumerate(cards)]}

    day = 86_400_000_000
    ts = 1_795_911_461_372_000                                   # 2026-11-28, late
    carried = [pack(f"TBP-0{k % 3}", f"P-{k}", ts - (k % 11) * day + k, k % 5 if k % 5 < 4 else None)
               for k in range(60)]
    carried.append({**pack("TBP-09", "P-no-ts", ts, 1), "first_ts": None})
    tonight = [pack("TBP-01", f"N-{k}", ts + day + k, k % 4) for k in range(3)]
    blobs = (None, [(RunKeys.of(tonight[:2]).to_bytes(), pack_bytes(orjson.dumps(tonight[:2]))),
                    (RunKeys.of(tonight[2:]).to_bytes(), pack_bytes(orjson.dumps(tonight[2:]))), NO_PACK_CARDS])
    step = FindRepeatedRuns(GamingDayConfig(), DayPlan("2026-11-29", "2026-11-28", run_id="r", retention_days=7))
    rows = [_state_row(r) for r in carried]
    fired = [("TBP-02", "P-7")]

    def outputs(gen):
        found, state_rows = [], []
        for o in gen:
            if hasattr(o, "tag"):       # the pack index: packed tables of its rows
                kind, packed = o.value
                state_rows += [(o.tag, (kind, row)) for row in state.rows_of(unpack(packed))]
            else:
                (name, day_), table = o
                found.append((name, day_, table.to_pylist()))
        return found, state_rows

    got = outputs(step.process(blobs, fired, rows))
    expected = _repeat_check_by_its_definition(step, carried, tonight, fired)
    assert [(n, d, sorted(t, key=lambda r: r["finding_id"])) for n, d, t in got[0]] == \
        [(n, d, sorted(t, key=lambda r: r["finding_id"])) for n, d, t in expected[0]]
    assert got[1] == expected[1]
    assert [r["record"] for _tag, (_kind, r) in got[1][:3]] == [rows[k]["record"] for k in range(3)]   # as they came
    findings = [r for _n, _d, table in got[0] for r in table]
    assert len(findings) >= 3 and len(got[1]) < len(carried) + len(tonight)   # repeats raised; the old packs dropped


def test_the_replays_repeat_check_reads_the_prior_pack_index_from_the_day_befores_state_files(tmp_path):
    """In the replay the step is handed no prior rows (no Beam side input of a row a pack): it reads
    the day before's ``pack_cards`` state file itself, and gives what the rows handed in give."""
    from pitwatch.lake import state
    from pitwatch.pipelines.coders import pack_bytes, unpack
    from pitwatch.pipelines.graph import DayPlan
    from pitwatch.pipelines.replay import NO_PACK_CARDS, FindRepeatedRuns
    from pitwatch.rules.repeated_runs import RunKeys

    cards = ["6d", "5d", "5h", "4d", "Qc", "Qs", "8c", "4c", "4h", "2d", "As"]
    ts = 1_795_911_461_372_000

    def pack(pack_id, first_ts):
        return {"table_id": "TBP-01", "pack_id": pack_id, "game": "three_bet_poker", "first_ts": first_ts,
                "source": "shoe", "cards": [[i + 1, c, f"{pack_id}-{i}", first_ts + i] for i, c in enumerate(cards)]}

    carried = [pack("P-A", ts), pack("P-C", ts - 30 * 86_400_000_000)]      # P-C: out of the window
    rows = [_state_row(r) for r in carried]
    lake = Lake.at(tmp_path / "lake")
    written = state.write_state_file(lake, "2026-11-28", "r0", "pack_cards", rows)
    files = (f"{tmp_path / 'lake'}/{state.TABLE}/{written.path}",)
    plan = DayPlan("2026-11-29", "2026-11-28", run_id="r", prior_state=files)
    tonight = pack("P-B", ts + 60_000_000)
    blobs = (None, [(RunKeys.of([tonight]).to_bytes(), pack_bytes(orjson.dumps([tonight]))), NO_PACK_CARDS])

    def outputs(gen):      # the pack index comes as packed tables: a ("state", (kind, row)) a row here
        out = []
        for o in gen:
            if hasattr(o, "tag"):
                kind, packed = o.value
                out += [(o.tag, (kind, row)) for row in state.rows_of(unpack(packed))]
            else:
                out.append((o[0], o[1].to_pylist()))
        return out

    read_itself = outputs(FindRepeatedRuns(GamingDayConfig(), plan, lake).process(blobs, []))
    assert read_itself == outputs(FindRepeatedRuns(GamingDayConfig(), plan).process(blobs, [], rows))
    assert [v[1]["pack_id"] for tag, v in read_itself if tag == "state"] == ["P-A", "P-B"]
    assert [r["pack_id"] for key, table in read_itself if key[0] == "findings" for r in table] == ["P-B"]


def test_state_differences_names_the_rows_that_differ_kind_by_kind(tmp_path):
    """The early stop's comparison: the same rows in two sets of state files are no difference
    (whatever file holds them); a pack or a table whose row differs is named under its kind."""
    from pitwatch.lake import state
    from pitwatch.pipelines import lake_run

    lake = str(tmp_path / "lake")
    packs = [{"table_id": "T1", "pack_id": f"P{k}", "first_ts": 10 + k, "record": json.dumps({"k": k})}
             for k in range(3)]
    tables = [{"table_id": "T1", "state": json.dumps({"open": True})}, {"table_id": "T2", "state": "{}"}]

    def files(run_id, packs, tables):
        return [f"{lake}/{state.TABLE}/{state.write_state_file(Lake.at(lake), '2026-11-28', run_id, kind, rows).path}"
                for kind, rows in (("pack_cards", packs), ("tables", tables), ("devices", []))]

    mine = files("r1", packs, tables)
    assert lake_run.state_differences(Lake.at(lake), mine, files("r2", list(reversed(packs)), tables)) == {}
    other = files("r3", packs[:2] + [{**packs[2], "record": json.dumps({"k": 9})}],
                  [tables[0], {"table_id": "T2", "state": '{"open": true}'}])
    assert lake_run.state_differences(Lake.at(lake), mine, other) == {"pack_cards": ["T1:P2"], "tables": ["T2"]}
