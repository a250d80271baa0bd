"""The exit codes of every ``pitwatch`` command: one table a scheduler can act on.

=====  ==============================================================
code   meaning
=====  ==============================================================
0      done
1      findings at or above ``--fail-on``
2      input or configuration error (a bad option, file, statement or
       parameter); the message names it
3      did not complete: the run failed or was interrupted (SIGINT,
       SIGTERM), or a query was stopped by its ``--timeout`` or
       ``--max-memory`` or its output cut at ``--max-rows`` or
       ``--max-bytes`` (not the whole answer)
4      the lake is held by another writer: ``run``, ``vacuum``, ``review`` or
       ``dealers import`` waited ``--lock-timeout`` for the lake's lock
       (:mod:`pitwatch.lake.lock`);
       the message names the holder (run id, pid, host, since when)
5      the lake is not intact (``pitwatch verify``)
=====  ==============================================================

Every command imports its codes from here; ``docs/operations.md`` documents them.
"""
from __future__ import annotations

DONE = 0
FINDINGS = 1
USAGE = 2
INCOMPLETE = 3
LOCKED = 4
NOT_INTACT = 5

TABLE = (
    (DONE, "done"),
    (FINDINGS, "findings at or above --fail-on"),
    (USAGE, "input or configuration error"),
    (INCOMPLETE, "did not complete: failed, interrupted, a query limit"),
    (LOCKED, "the lake is held by another writer"),
    (NOT_INTACT, "the lake is not intact (verify)"),
)
