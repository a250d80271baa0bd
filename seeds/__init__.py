"""Static reference data (CSV): games, paytables, burn values.  See seeds/README.md."""
