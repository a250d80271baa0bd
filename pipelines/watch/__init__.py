"""``pitwatch watch``: the embedded live service around the same ``rules/`` engine.

Modules (each small, each with its own docstring):

* :mod:`pipelines.watch.sources`: follow growing JSONL files and folders; Redis Streams.
* :mod:`pipelines.watch.order`: per-device duplicate drop and ``seq`` order (bounded wait).
* :mod:`pipelines.watch.engine`: the tables' ``TableReplay`` + one ``SeqTracker``, fed live.
* :mod:`pipelines.watch.redact`: alerts never show a shoe card the terminal has not dealt yet.
* :mod:`pipelines.watch.sinks`: stdout JSON lines, JSONL file, HTTP webhook, lake ``alerts/``.
* :mod:`pipelines.watch.checkpoint`: atomic checkpoint + delivery journal (exactly once).
* :mod:`pipelines.watch.service`: the loop that wires them (signals, idle stop, finalize).

The design and its guarantees are written down in ``docs/watch.md``.
"""
