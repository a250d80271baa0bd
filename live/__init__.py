"""``pitwatch watch``: the embedded live service around the same ``rules/`` engine.

Modules (each small, each with its own docstring):

* :mod:`live.sources`: follow growing JSONL files and folders; Redis Streams.
* :mod:`live.order`: per-device duplicate drop and ``seq`` order (bounded wait).
* :mod:`live.engine`: the tables' ``TableReplay`` + one ``SeqTracker``, fed live.
* :mod:`live.redact`: alerts never show a shoe card the terminal has not dealt yet.
* :mod:`live.sinks`: stdout JSON lines, JSONL file, HTTP webhook, lake ``alerts/``.
* :mod:`live.checkpoint`: atomic checkpoint + delivery journal (exactly once).
* :mod:`live.service`: the loop that wires them (signals, idle stop, finalize).

The design and its guarantees are written down in ``docs/watch.md``.
"""
