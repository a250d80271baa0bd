"""The pitwatch event contract (docs/spec/events.md): typed events, decoding, Arrow schemas.

Knows nothing of Beam or the rules: pure data definitions.
"""
