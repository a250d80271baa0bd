"""``pitwatch watch``: the embedded live service around the same ``rules/`` engine.

Modules (each small, each with its own docstring):

* :mod:`pitwatch.live.sources`: follow growing JSONL files and folders; Redis Streams.
* :mod:`pitwatch.live.order`: per-device duplicate drop and ``seq`` order (bounded wait).
* :mod:`pitwatch.live.engine`: one :class:`pitwatch.engine.driver.TableDriver` per table + one SEQ_GAP tracker, fed live.
* :mod:`pitwatch.live.redact`: alerts never show a shoe card the terminal has not dealt yet.
* :mod:`pitwatch.live.sinks`: stdout JSON lines, JSONL file, HTTP webhook, lake ``alerts/``.
* :mod:`pitwatch.live.checkpoint`: atomic checkpoint + delivery journal (exactly once).
* :mod:`pitwatch.live.service`: the loop that wires them (signals, idle stop, finalize).

The design and its guarantees are written down in ``docs/watch.md``.
"""
