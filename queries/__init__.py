"""Named investigations: one DuckDB SQL file per query.  See queries/README.md."""
