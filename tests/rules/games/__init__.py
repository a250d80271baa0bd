"""Per-game procedure tests (one file family per procedure document)."""
