"""The lake: its Delta tables, their Parquet files, the runs chain and its anchor, the lake's lock,
settings and registry, and what keeps it (verify, vacuum, migrate).  No Beam.  See docs/lake.md.
"""
