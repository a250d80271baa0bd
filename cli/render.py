"""The one output renderer of the CLI: rows as ``table``, ``text``, ``csv`` or ``json`` (JSON lines).

``text`` is for a person at a terminal: one record per block (blocks apart
by a blank line), one ``column: value`` line per column that has a value (a
NULL, an empty string and an empty list are left out), values aligned.  With
no ``--format`` (:func:`choose_format`) the answer is a table, or text when
stdout is a terminal and the table would be wider than it
(``shutil.get_terminal_size``: ``COLUMNS`` or the terminal's own width); when
stdout is not a terminal the default stays ``table``, so scripts see what they
always saw.  ``table``, ``text`` and ``csv`` show control characters of a value
(ESC, a newline, a bidi override, a zero-width space …) as ``\\x1b``,
``\\x0a``, ``\\u202e``: the lake's text never drives the terminal nor a
spreadsheet; ``json`` escapes them itself (``\\u001b``) and so keeps the exact
text (use it when the bytes matter).  In ``csv`` a text cell that begins with
``=``, ``+``, ``-`` or ``@`` is written after a ``'`` (a spreadsheet would run
it as a formula); numbers are written as numbers, ``-5`` included.  A float
is written in full, never in exponent form below 10**16 (``1457080``, not
``1.45708e+06``), and as the shortest text that reads back as the same float
(``0.1``), in every format but ``json`` (which writes the float itself).

Counts printed for people go through :func:`pitwatch.wording.plural` (``1 finding``, ``2 findings``,
``1,234 events``): the same helper the rules write their findings with.
"""
from __future__ import annotations

import csv
import datetime as _dt
import decimal
import io
import math
import shutil
import sys
from typing import Any, Sequence

import click
import orjson

__all__ = ["FORMATS", "format_option", "render"]

FORMATS = ("table", "text", "csv", "json")

format_option = click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default=None,
    help="Output format: an aligned table, text (one block per record: 'column: value' lines, "
         "empty columns left out), CSV with a header, or one JSON object per line.  "
         "Default: table, or text when the table is wider than the terminal.",
)


# a terminal obeys these: a value in the lake (a dealer's name, a reason) must not rewrite the
# operator's screen or reorder what it shows; table and text print them as \x1b, \u202e …
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x20), *range(0x7f, 0xa0)]}
_CONTROLS.update({c: f"\\u{c:04x}" for c in [*range(0x200b, 0x2010), *range(0x202a, 0x202f),
                                              *range(0x2066, 0x206a), 0xfeff]})


def visible(text: str) -> str:
    """``text`` with its control characters written out (``\\x1b``), for a terminal."""
    return text.translate(_CONTROLS)


_visible = visible


def _text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_text(x) for x in v) + "]"
    if isinstance(v, float):
        return _number(v)
    return str(v)


def _number(v: float) -> str:
    """A float as people read it and as it reads back: a whole number below 10**16 without its
    ``.0`` (1457080.0 is ``1457080``, never ``1.45708e+06``), any other the shortest text that
    reads back as the same float (``repr``: 0.1 is ``0.1``), so a CSV round-trips exactly."""
    negative_zero = v == 0 and math.copysign(1.0, v) < 0      # int() would lose its sign
    if v.is_integer() and abs(v) < 1e16 and not negative_zero:
        return str(int(v))
    return repr(v)


def _cell(v: Any) -> str:
    """A value as a table or text cell: control characters shown, not obeyed."""
    return _visible(_text(v))


# a spreadsheet reads a cell that begins with one of these as a formula (=HYPERLINK(…) sends the
# sheet's data away when clicked); tab and carriage return are control characters, escaped anyway
_FORMULA_START = ("=", "+", "-", "@")


def _csv_cell(v: Any):
    """A value as a CSV cell: a number as a number; text with its control characters escaped
    (``\x1b``, as table and text show them) and, when it begins like a formula, after a ``'``
    (the OWASP neutralisation: the cell shows as text, the quote visible)."""
    if v is None:
        return ""
    if isinstance(v, bool) or not isinstance(v, (int, float, decimal.Decimal)):
        text = _visible(_text(v))
        return "'" + text if text.startswith(_FORMULA_START) else text
    return _text(v)


def _json_default(v: Any):
    # dates and times are written here (OPT_PASSTHROUGH_DATETIME): orjson refuses a time with a zone
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, (_dt.date, _dt.datetime, _dt.time)):
        return v.isoformat()
    return str(v)


def _cells(rows: Sequence[Sequence[Any]]) -> list[list[str]]:
    return [[_cell(v) for v in r] for r in rows]


def table_width(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
    """The width in characters of the ``table`` rendering's widest line."""
    return len(max(render(columns, rows, "table").splitlines(), key=len, default=""))


def choose_format(fmt: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]], stream=None) -> str:
    """``fmt`` if given; else ``text`` when ``stream`` (stdout) is a terminal narrower than the table, else ``table``."""
    if fmt:
        return fmt
    stream = sys.stdout if stream is None else stream
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    if not terminal or not rows:
        return "table"
    return "text" if table_width(columns, rows) > shutil.get_terminal_size().columns else "table"


def _empty(v: Any) -> bool:
    return v is None or v == "" or (isinstance(v, (list, tuple)) and len(v) == 0)


def render_text(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """One block per row: ``column: value`` for every column with a value; ``(no rows)`` for none."""
    if not rows:
        return "(no rows)\n"
    width = max((len(c) for c in columns), default=0) + 1
    blocks = []
    for r in rows:
        lines = []
        for c, v in zip(columns, r):
            if _empty(v):
                continue
            value = ("\n" + " " * (width + 1)).join(_visible(part) for part in _text(v).split("\n"))
            lines.append(f"{_visible(c) + ':':<{width}} {value}".rstrip())
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def render(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str | None) -> str:
    fmt = choose_format(fmt, columns, rows)
    if fmt == "text":
        return render_text(columns, rows)
    if fmt == "json":
        return "".join(
            orjson.dumps(dict(zip(columns, r)), default=_json_default, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME).decode() + "\n"
            for r in rows
        )
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([_csv_cell(c) for c in columns])
        for r in rows:
            w.writerow([_csv_cell(v) for v in r])
        return buf.getvalue()
    cells = _cells(rows)
    columns = [_visible(str(c)) for c in columns]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    line = lambda vals: "  ".join(v.ljust(w) for v, w in zip(vals, widths)).rstrip()  # noqa: E731
    out = [line(columns), line(["-" * w for w in widths])] + [line(r) for r in cells]
    return "\n".join(out) + "\n"
