"""The engine's driver: a table's events, in order, through :mod:`pitwatch.rules` (no Beam, no I/O but the seeds).

The batch (:mod:`pitwatch.pipelines`) and the live service (:mod:`pitwatch.live`) both replay with it.
"""
