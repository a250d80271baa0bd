"""Fixtures: the hand-built lake of :mod:`tests.queries.lakes` (built once per module)."""
from __future__ import annotations

import pytest

from tests.queries.lakes import build_lake


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> str:
    return build_lake(str(tmp_path_factory.mktemp("lake")))


@pytest.fixture(scope="module")
def con(lake):
    from queries.lake_views import connect

    con = connect(lake)
    yield con
    con.close()
