"""The replay engine: every dealing procedure as pure, incremental Python (no Beam, no I/O)."""
