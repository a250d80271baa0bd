"""bench/batch.py --stages: a run's time per stage of the embedded runner, from when each stage started."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("bench_batch", Path(__file__).parent.parent / "bench" / "batch.py")
bench_batch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_batch)


def test_a_stage_lasts_until_the_next_one_starts_and_is_named_by_its_steps():
    starts = [
        (10.5, "((ref_AppliedPTransform_ListInputs-Impulse_3)+(ref_AppliedPTransform_ReadChunks_15))"
               "+(FindConflictingIds/GroupIdsByBucket/Write)+(AllBookkeeping/Write/1)"),
        (12.0, "((GroupTableRows/Read)+(ref_AppliedPTransform_ReplayTables-ParDo-ReplayTable-_24))"),
        (19.25, "something Beam named otherwise"),
    ]
    got = bench_batch.stage_times(10.0, 20.0, starts)
    assert [label for label, _ in got] == [
        "(start: imports, workers, pipeline)", "ListInputs+ReadChunks+FindConflictingIds",
        "GroupTableRows+ReplayTables", "something Beam named otherwise"]
    assert [s for _, s in got] == pytest.approx([0.5, 1.5, 7.25, 0.75])
    assert sum(s for _, s in got) == pytest.approx(10.0)


def test_a_run_with_no_stage_is_all_start():
    assert bench_batch.stage_times(1.0, 4.0, []) == [("(start: imports, workers, pipeline)", 3.0)]


def test_the_bench_says_whether_the_engine_runs_compiled(monkeypatch):
    import rules

    if not rules.compiled_modules():
        pytest.skip("rules/ not compiled (installed with PITWATCH_PURE=1)")
    monkeypatch.delenv("PITWATCH_PURE", raising=False)
    assert bench_batch.engine_build() == "compiled (Cython, setup.py)"   # make install built it from these sources
    monkeypatch.setenv("PITWATCH_PURE", "1")
    assert bench_batch.engine_build() == "from source (PITWATCH_PURE=1)"
