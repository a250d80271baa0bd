"""The simulated floor's roster: ``dealers.csv`` (id, name, shift) beside the feeds.

The casino's own file has the same columns (``seeds/dealers.csv``,
``pitwatch query … --dealers FILE``; see :mod:`pitwatch.queries.dealers`).  A name is
made from the dealer id alone (a CRC of it picks a first and a last name), so
no random stream of the simulation is touched and the same id always gets the
same name.  The shift is the casino's name for the part of the day the
simulated session starts in (UTC hour: 06–14 ``day``, 14–22 ``swing``, else
``grave``): every dealer of one run works the same shift.
"""
from __future__ import annotations

import csv
import datetime as _dt
import zlib
from pathlib import Path

from pitwatch.schemas.contract import DEALER_ROSTER_COLUMNS

FIRST = ("Ana", "Luis", "Carmen", "Jorge", "Maria", "José", "Rosa", "Carlos", "Elena", "Pedro",
         "Lucía", "Miguel", "Sofía", "Rafael", "Isabel", "Tomás", "Paula", "Andrés", "Marta", "Diego")
LAST = ("Rivera", "Santiago", "Colón", "Ortiz", "Vega", "Cruz", "Torres", "Ramos", "Morales", "Díaz",
        "Reyes", "Medina", "Soto", "Figueroa", "Pagán", "Rosario", "Nieves", "Ocasio", "Burgos", "Quiñones")


def dealer_name(dealer_id: str) -> str:
    n = zlib.crc32(dealer_id.encode("utf-8"))
    return f"{FIRST[n % len(FIRST)]} {LAST[(n // len(FIRST)) % len(LAST)]}"


def shift_of(start: _dt.datetime) -> str:
    hour = start.astimezone(_dt.timezone.utc).hour
    return "day" if 6 <= hour < 14 else "swing" if 14 <= hour < 22 else "grave"


def write_dealers(out: Path, dealer_ids, start: _dt.datetime) -> Path:
    """``out/dealers.csv``: one row per dealer id (sorted), UTF-8, header ``id,name,shift``."""
    path = Path(out) / "dealers.csv"
    shift = shift_of(start)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(DEALER_ROSTER_COLUMNS)
        for dealer_id in sorted(set(dealer_ids)):
            w.writerow([dealer_id, dealer_name(dealer_id), shift])
    return path
