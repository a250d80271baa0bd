"""Fixtures: the hand-built lake of :mod:`tests.queries.lakes` (built once per module)."""
from __future__ import annotations

import pytest

from pitwatch.lake import Lake
from tests.queries.lakes import build_lake


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> str:
    return build_lake(str(tmp_path_factory.mktemp("lake")))


@pytest.fixture(scope="module")
def con(lake):
    from pitwatch.queries.lake_views import connect

    con = connect(Lake.at(lake))
    yield con
    con.close()


@pytest.fixture(scope="module")
def dealers_file(tmp_path_factory) -> str:
    """A casino's dealers file for the test lake's dealers D-1, D-2 (D-3 has no row)."""
    path = tmp_path_factory.mktemp("dealers") / "dealers.csv"
    path.write_text("id,name,shift\nD-1,Ana Rivera,swing\nD-2,Luis Vega,grave\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """``pitwatch demo`` run once as a real process in a folder of its own, as a newcomer runs it
    (``demo/feeds``, ``demo/lake``): ``(folder, the finished process)``.  Tests that write to the
    lake copy the folder first, so every test sees the lake the demo left."""
    from tests.conftest import run_pitwatch_process

    cwd = tmp_path_factory.mktemp("demo")
    result = run_pitwatch_process("demo", cwd=cwd, timeout=300)
    assert result.returncode == 0, result.stderr
    return cwd, result
