"""What pitwatch reads from outside: input files (JSONL, gzip, Parquet) read once and hashed as read,
their damage, and the devices registry (``devices.csv``).  No Beam, no lake.  See docs/inputs.md.
"""
