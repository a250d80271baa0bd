"""``pitwatch.console``: the surveillance console (``pitwatch serve``) and the daily report
(``pitwatch report``), what people look at rather than read, with their charts and the round picture.

A web application (Starlette, Jinja2, uvicorn) over the lake, read through the analysts'
connection (:mod:`pitwatch.queries.lake_views`): :mod:`~pitwatch.console.app` builds it,
:mod:`~pitwatch.console.auth` says who may use it, :mod:`~pitwatch.console.view` is what every
page shares (and how a page is added), one module per page.  It sits beside the command line at
the top of the layers (``docs/layout.md``); only :mod:`pitwatch.cli` imports it.  docs/console.md
describes it.
"""
