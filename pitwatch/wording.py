"""Counted nouns in messages: ``plural(1, "file")`` is "1 file", ``plural(2, "file")`` "2 files".

The one :func:`plural` of pitwatch: the rules write their findings with it, the batch, the lake
and the CLI their messages and summaries.
"""
from __future__ import annotations

_IRREGULAR = {"coup": "coups", "is": "are", "was": "were", "has": "have"}


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 finding``, ``2 findings``, ``0 findings``; ``many`` for an irregular plural.

    Thousands are grouped (``1,234 events``), as the CLI prints large counts.
    """
    if n == 1:
        return f"1 {word}"
    return f"{n:,} {many or _IRREGULAR.get(word) or _plural_word(word)}"


def _plural_word(word: str) -> str:
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "i", "o", "u"):
        return word[:-1] + "ies"
    return word + "s"
