"""Named investigations: one DuckDB SQL file per query.  See queries/README.md.

``queries`` reads the lake only: :mod:`pitwatch.queries.lake_views` opens the analysts'
DuckDB connection (the lake's tables as Arrow datasets, no file system);
:mod:`pitwatch.queries.statement_check` refuses what is not a plain query;
:mod:`pitwatch.queries.catalog` loads the ``*.sql`` files (via importlib.resources, so
an installed wheel finds them) and binds typed, range-checked parameters.
"""


def load_queries():
    """Every investigation shipped with pitwatch, by name (see :mod:`pitwatch.queries.catalog`)."""
    from pitwatch.queries.catalog import load_queries as _load

    return _load()
