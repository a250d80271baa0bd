"""The replay engine's rules: every dealing procedure as pure, incremental Python (no Beam, no I/O).

:mod:`pitwatch.rules.table` is the engine's face (``TableReplay``); the
driver that feeds it a table's events is :mod:`pitwatch.engine.driver`, the
reference data it is built with :mod:`pitwatch.seeds`.  See docs/engine.md.
"""
