"""The one output renderer of the CLI: rows as ``table``, ``csv`` or ``json`` (JSON lines).

Counts printed for people go through :func:`plural` (``1 finding``, ``2 findings``,
``1,234 events``): the same helper the rules write their findings with
(:func:`rules.words.plural`).
"""
from __future__ import annotations

import csv
import datetime as _dt
import decimal
import io
from typing import Any, Sequence

import click
import orjson

from rules.words import plural

__all__ = ["FORMATS", "format_option", "plural", "render"]

FORMATS = ("table", "csv", "json")

format_option = click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
    help="Output format: an aligned table, CSV with a header, or one JSON object per line.",
)


def _text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_text(x) for x in v) + "]"
    if isinstance(v, float):
        return f"{v:g}" if abs(v) < 1e15 else repr(v)
    return str(v)


def _json_default(v: Any):
    # dates and times are written here (OPT_PASSTHROUGH_DATETIME): orjson refuses a time with a zone
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, (_dt.date, _dt.datetime, _dt.time)):
        return v.isoformat()
    return str(v)


def render(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str) -> str:
    if fmt == "json":
        return "".join(
            orjson.dumps(dict(zip(columns, r)), default=_json_default, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME).decode() + "\n"
            for r in rows
        )
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow([_text(v) for v in r])
        return buf.getvalue()
    cells = [[_text(v) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    line = lambda vals: "  ".join(v.ljust(w) for v, w in zip(vals, widths)).rstrip()  # noqa: E731
    out = [line(columns), line(["-" * w for w in widths])] + [line(r) for r in cells]
    return "\n".join(out) + "\n"
