"""``pitwatch.console``: what people look at rather than read — the web console (``pitwatch serve``),
the day's compliance report (``pitwatch report``), their charts and the round picture.

It sits beside the command line at the top of the layers (``docs/layout.md``): it reads the lake
through the analysts' connection (:mod:`pitwatch.queries.lake_views`), and only :mod:`pitwatch.cli`
imports it.
"""
