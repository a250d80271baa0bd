"""What can go wrong when people query the lake, as exceptions the CLI maps to exit codes."""
from __future__ import annotations


class LakeQueryError(ValueError):
    """A user's SQL, parameter or lake cannot be used (refused statement, DuckDB error, no lake): exit 2."""


class RefusedStatement(LakeQueryError):
    """The statement is not a plain query over the lake (or is not one statement)."""


class QueryInterrupted(Exception):
    """The query was stopped by its time limit before it completed: exit 3."""


class QueryTooLarge(QueryInterrupted):
    """The query needed more memory than its limit (DuckDB's, or the process's address space): exit 3."""
