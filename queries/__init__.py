"""Named investigations: one DuckDB SQL file per query.  See queries/README.md.

``queries`` reads the lake only: :mod:`queries.lake_views` opens DuckDB with a
view per lake table; :mod:`queries.catalog` loads the ``*.sql`` files (via
importlib.resources, so an installed wheel finds them) and binds parameters.
"""


def load_queries():
    """Every investigation shipped with pitwatch, by name (see :mod:`queries.catalog`)."""
    from queries.catalog import load_queries as _load

    return _load()
