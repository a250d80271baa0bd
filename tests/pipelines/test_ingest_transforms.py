"""Beam TestPipeline + assert_that tests of the ingest transforms (FnApiRunner, no Prism)."""
from __future__ import annotations

import json

import apache_beam as beam
import pyarrow as pa
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from pitwatch.pipelines.ingest import (
    REJECTED_KEY,
    TAG_COUNTS,
    TAG_REJECTS,
    DecodeChunk,
    FindConflictingIds,
    deduplicate,
)
from pitwatch.schemas.arrow import events_to_table
from pitwatch.schemas.decode import GamingDayConfig, decode_line
from tests.conftest import event, line

OPTIONS = PipelineOptions(["--runner=FnApiRunner"])


def _chunk(lines, path="f.jsonl"):
    return (path, "jsonl", [(i + 1, l.encode()) for i, l in enumerate(lines)])


@pytest.mark.slow
def test_decode_chunk_gives_the_chunks_events_as_one_table_and_tags_rejects_and_counts():
    lines = [line(seq=1), line(seq=2, table_id="BAC-08"), line(seq=3, card="Zz"), "not json"]
    with BeamTestPipeline(options=OPTIONS) as p:
        out = (p | beam.Create([_chunk(lines)])
               | beam.ParDo(DecodeChunk(GamingDayConfig())).with_outputs(TAG_REJECTS, TAG_COUNTS, main="events"))
        assert_that(out.events | beam.Map(lambda t: (t.column("table_id").to_pylist(), t.column("line").to_pylist())),
                    equal_to([(["BAC-07", "BAC-08"], [1, 2])]), label="events")
        assert_that(out[TAG_REJECTS] | beam.FlatMap(lambda rows: [(r["line"], r["reason"][:14]) for r in rows]),
                    equal_to([(3, "field 'card' i"), (4, "not valid JSON")]), label="rejects")
        assert_that(out[TAG_COUNTS], equal_to([{"read": 4, "rejected": 2}]), label="counts")


@pytest.mark.slow
def test_find_conflicting_ids_across_tables_and_with_rejected_copies():
    def ids_table(pairs):
        return pa.table({"event_id": [e for e, _ in pairs], "table_key": [k for _, k in pairs]})

    ids = [
        (1, ids_table([("a", "BAC-07"), ("b", "BAC-07")])),
        (1, ids_table([("a", "BAC-08"), ("b", "BAC-07")])),   # a: two tables → conflict; b: same → fine
        (2, ids_table([("c", "BAC-07"), ("c", REJECTED_KEY)])),  # c: a valid and a rejected copy
        (3, ids_table([("d", "BAC-07"), ("e", "BAC-08")])),   # every id once: no conflict to look for
    ]
    with BeamTestPipeline(options=OPTIONS) as p:
        out = p | beam.Create(ids) | FindConflictingIds()
        assert_that(out, equal_to(["a", "c"]))


def _table(lines, path):
    """Write ``lines`` to ``path`` (deduplicate may read them again) and decode them."""
    path.write_text("".join(l + "\n" for l in lines))
    cfg = GamingDayConfig()
    return events_to_table([decode_line(l, str(path), i + 1, cfg)[0] for i, l in enumerate(lines)])


def test_deduplicate_keeps_first_copy_counts_duplicates_rejects_conflicts(tmp_path):
    same = line(seq=1)
    reordered = json.dumps(dict(reversed(list(json.loads(same).items()))))
    changed = line(seq=2, card="9c", event_id="e-x")
    t1 = _table([same, line(seq=2, event_id="e-x")], tmp_path / "a.jsonl")
    t2 = _table([reordered, changed, line(seq=3)], tmp_path / "b.jsonl")
    out = deduplicate([t2, t1], frozenset())
    assert out.events.column("event_id").to_pylist() == ["e-card_drawn-1", "e-card_drawn-3"]
    assert [f.rsplit("/", 1)[1] for f in out.events.column("file").to_pylist()] == ["a.jsonl", "b.jsonl"]
    assert out.duplicates == 1
    assert sorted((c["file"].rsplit("/", 1)[1], c["line"]) for c in out.conflicts) == [("a.jsonl", 2), ("b.jsonl", 2)]
    assert all("conflicting duplicate" in c["reason"] for c in out.conflicts)


def test_deduplicate_compares_copies_with_equal_columns_as_parsed_json(tmp_path):
    """Same instant spelled differently, a null against an absent key: equal columns, different JSON."""
    base = event(seq=1)
    offset = {**base, "ts": base["ts"].replace("Z", "+00:00")}
    with_null = {**event(seq=2), "card": None}
    t = _table([json.dumps(base), json.dumps(offset), json.dumps(event(seq=2)), json.dumps(with_null),
                json.dumps(event(seq=3)), " " + json.dumps(event(seq=3))], tmp_path / "a.jsonl")
    out = deduplicate([t], frozenset())
    assert sorted({c["event_id"] for c in out.conflicts}) == ["e-card_drawn-1", "e-card_drawn-2"]
    assert out.duplicates == 1 and out.events.column("event_id").to_pylist() == ["e-card_drawn-3"]


def test_deduplicate_rejects_ids_in_conflict_elsewhere(tmp_path):
    from pitwatch.pipelines.ingest import identity_key

    elsewhere = frozenset({identity_key("SHOE-1", "e-card_drawn-2")})   # (device_id, event_id): contract v2
    out = deduplicate([_table([line(seq=1), line(seq=2)], tmp_path / "f.jsonl")], elsewhere)
    assert out.events.num_rows == 1 and [c["event_id"] for c in out.conflicts] == ["e-card_drawn-2"]
