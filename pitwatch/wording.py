"""Counted nouns in messages: ``plural(1, "file")`` is "1 file", ``plural(2, "file")`` "2 files"."""
from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` with thousands separators and ``word``, or ``many`` (default ``word + "s"``) unless n is 1."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"
