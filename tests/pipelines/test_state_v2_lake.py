"""A lake a night of ``main`` before the typed records (engine state 2) left, taken up by this pitwatch.

``tests/data/lake-main-v2-state.tar.gz``: the lake ``pitwatch run --day 2026-11-28 --inbox INBOX
--lake lake`` of ``main`` at 555ec7e wrote from the first night of
:func:`tests.pipelines.test_state_v1_lake.two_nights` (its pack P-1 still open, its state carried:
engine state 2), INBOX written by that module's ``write_inbox(INBOX, days=("2026-11-28",))``.
This pitwatch's next night goes on from that state (migrated to the typed records); the lake
then holds the rows — whole rows — a lake this pitwatch wrote both nights into holds.
"""
from __future__ import annotations

import json
import tarfile

import pytest

from tests import lake_rows
from tests.data import HERE
from tests.pipelines.test_state_v1_lake import NIGHT_1, NIGHT_2, night, write_inbox

pytestmark = pytest.mark.slow
FIXTURE = HERE / "lake-main-v2-state.tar.gz"


def test_the_next_night_on_a_version_2_lake_gives_the_rows_of_this_pitwatchs_two_nights(tmp_path):
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(tmp_path / "old", filter="data")
    old = tmp_path / "old" / "lake"
    from deltalake import DeltaTable

    state_rows = DeltaTable(str(old / "state")).to_pyarrow_table().to_pylist()
    carried = [json.loads(r["payload"]) for r in state_rows if r["kind"] == "tables"]
    assert {s["v"] for s in carried} == {2} and any(s["packs"] for s in carried)     # P-1 open, engine state 2
    write_inbox(tmp_path / "inbox-2", days=(NIGHT_2,))    # night 1 as main left it: not replayed again
    out = night(NIGHT_2, tmp_path / "inbox-2", old)
    assert f"gaming days {NIGHT_2}\n" in out, out

    write_inbox(tmp_path / "inbox")
    fresh = tmp_path / "fresh"
    night(NIGHT_1, tmp_path / "inbox", fresh)
    night(NIGHT_2, tmp_path / "inbox", fresh)

    key = lambda r: json.dumps(r, sort_keys=True, default=str)  # noqa: E731
    for name in ("findings", "rounds", "packs"):
        got, want = lake_rows.dicts(old, name), lake_rows.dicts(fresh, name)
        assert sorted(map(key, got)) == sorted(map(key, want)), name
        assert want or name == "findings"     # a clean feed: rows, no findings
