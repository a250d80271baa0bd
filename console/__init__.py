"""``pitwatch.console``: the surveillance console (``pitwatch serve``) and the daily report.

A web application (Starlette, Jinja2, uvicorn) over the lake, read through the analysts'
connection (:mod:`pitwatch.queries.lake_views`): :mod:`~pitwatch.console.app` builds it,
:mod:`~pitwatch.console.auth` says who may use it, :mod:`~pitwatch.console.view` is what every
page shares (and how a page is added), one module per page.  docs/console.md describes it.
"""
