"""Static reference data (CSV): games, paytables, burn values.  See seeds/README.md.

Settings files have the columns ``table_id,setting,value``; a ``table_id`` of
``*`` is the default for every table, a named table overrides it.
``burn_values.csv`` has ``table_id,rank,value`` (document 003 4.8).
``tables.csv`` holds settings about the table itself (``shoe``: whether it
deals from a card-reading shoe; ``auto`` = the game's default).
:func:`load_reference` turns them into the :class:`pitwatch.rules.reference.TableReference`
the replay engine takes (``rules/`` itself does no I/O).
"""
from __future__ import annotations

import csv
import io
from importlib import resources
from typing import Any

from pitwatch.rules.reference import TableReference
from pitwatch.schemas.contract import RANKS


def read_csv(name: str) -> list[dict[str, str]]:
    """Rows of ``seeds/<name>`` (packaged with pitwatch)."""
    text = resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def settings_for(table_id: str) -> dict[str, str]:
    """Every ``table_id,setting,value`` seed merged for one table: defaults, then the table's own."""
    out: dict[str, str] = {}
    files = sorted(p.name for p in resources.files(__name__).iterdir()
                   if p.name.endswith(".csv") and p.name != "burn_values.csv")
    for wanted in ("*", table_id):
        for name in files:
            for row in read_csv(name):
                if set(row) >= {"table_id", "setting", "value"} and row["table_id"] == wanted:
                    out[row["setting"]] = row["value"]
    return out


def burn_values_for(table_id: str) -> tuple[tuple[str, int], ...]:
    values: dict[str, int] = {}
    for wanted in ("*", table_id):
        for row in read_csv("burn_values.csv"):
            if row["table_id"] == wanted:
                values[row["rank"]] = int(row["value"])
    return tuple((r, values[r]) for r in RANKS)


def load_reference(table_id: str) -> TableReference:
    """The reference values of ``table_id`` (rules.md defaults where the seeds say nothing)."""
    settings = settings_for(table_id)
    known: dict[str, Any] = {}      # TableReference's keyword arguments: floats, ints and the shoe flag
    for name in ("player_pays", "banker_pays", "tie_pays", "payout_tolerance"):
        if name in settings:
            known[name] = float(settings.pop(name))
    for name in ("cut_min_from_end", "cut_card_min_from_back", "cards_per_deck"):
        if name in settings:
            known[name] = int(settings.pop(name))
    if "shoe" in settings:
        known["shoe"] = _shoe_flag(table_id, settings.pop("shoe"))
    return TableReference(burn_values=burn_values_for(table_id), settings=tuple(sorted(settings.items())), **known)


_FLAGS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False, "auto": None, "": None}


def _shoe_flag(table_id: str, text: str) -> bool | None:
    """``shoe``: true / false, or ``auto`` (empty) for the game's default."""
    try:
        return _FLAGS[text.strip().lower()]
    except KeyError:
        raise ValueError(f"seeds: table {table_id}: shoe = {text!r}, expected true, false or auto") from None


load = load_reference
