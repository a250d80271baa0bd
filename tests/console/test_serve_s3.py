"""``pitwatch serve`` on a lake on an S3 API (issue 44): a real console process reads the lake through
the standard AWS variables (moto's server, tests/object_store.py) and answers its Findings page and
a finding's page exactly as it does over the same lake on disk; its users file stays local
(``--users``, required: nothing is written beside a bucket)."""
from __future__ import annotations

import re

import pytest

from pitwatch.console import auth
from tests.console.conftest import PEOPLE
from tests.object_store import copy_lake, same_but_the_lake

pytestmark = pytest.mark.slow           # floor_lake: a real pitwatch demo replays a simulated floor


def page(client, path: str) -> tuple[int, str]:
    status, _url, body, _ = client.get(path)
    return status, re.sub(r'name="csrf_token" value="[^"]+"', 'name="csrf_token" value="TOKEN"', body)


def test_the_console_on_an_s3_lake_shows_the_pages_it_shows_on_disk(floor_lake, s3_lake, serve, client, pitwatch):
    copy_lake(floor_lake, s3_lake)
    users = auth.default_users_path(floor_lake)
    refused = pitwatch("serve", "--lake", s3_lake)
    assert refused.returncode == 2 and refused.stderr == (
        f"Error: the lake {s3_lake} is on an object store: give the users file with --users FILE\n")
    pages = []
    for lake in (floor_lake, s3_lake):
        c = client(serve(lake, "--users", users))
        assert c.login("vera")[0] == 200
        status, findings = page(c, "/findings")
        assert status == 200, findings
        first = re.findall(r'href="/findings/([^"?/]+)\?day=([0-9-]+)"', findings)[0]
        status, finding = page(c, f"/findings/{first[0]}?day={first[1]}")
        assert status == 200, finding
        pages.append([same_but_the_lake(p, lake) for p in (findings, finding)])
    assert pages[1] == pages[0]
    assert pages[0][0].count('href="/findings/') > 50 and PEOPLE["vera"][0] == "viewer"


def test_serve_refuses_an_s3_prefix_with_no_lake(s3_lake, floor_lake, pitwatch):
    result = pitwatch("serve", "--lake", s3_lake, "--users", auth.default_users_path(floor_lake))
    assert result.returncode == 2 and result.stderr == f"Error: no lake at {s3_lake} (not a folder)\n"


def test_a_reviewer_s_review_on_the_console_of_an_s3_lake_is_the_row_it_is_on_disk(
        floor_lake, s3_lake, serve, client, tmp_path):
    import shutil

    from pitwatch.lake import Lake
    from pitwatch.lake.reviews import dataset

    on_disk = str(tmp_path / "lake")
    shutil.copytree(floor_lake, on_disk)
    copy_lake(on_disk, s3_lake)
    users = auth.default_users_path(floor_lake)
    rows = []
    for lake in (on_disk, s3_lake):
        c = client(serve(lake, "--users", users))
        assert c.login("rita")[0] == 200
        _status, findings = page(c, "/findings")
        fid, day = re.findall(r'href="/findings/([^"?/]+)\?day=([0-9-]+)"', findings)[0]
        c.get(f"/findings/{fid}?day={day}")
        status, url, body, _ = c.post(f"/findings/{fid}/reviews?day={day}",
                                      {"disposition": "confirmed", "reason": "DEALER_ERROR", "note": "on video"})
        assert status == 200 and url == f"/findings/{fid}?day={day}", body[-500:]
        table = dataset(Lake.at(lake)).to_table().to_pylist()
        rows.append(sorted(({k: v for k, v in r.items() if k not in ("review_id", "reviewed_at", "review_sha256")}
                            for r in table), key=repr))
    assert rows[1] == rows[0] and len(rows[0]) == 3             # the demo's two reviews and rita's
    assert {"finding_id": fid, "reviewer": "rita", "disposition": "confirmed", "note": "on video"}.items() <= \
        [r for r in rows[0] if r["reviewer"] == "rita"][0].items()
