"""Charts as SVG text: a Vega-Lite spec rendered by ``vl-convert-python``, in this process, offline.

Why this library: Vega-Lite is a well-kept grammar of charts (axes, scales, legends, stacking done
right), and ``vl-convert-python`` bundles Vega and Vega-Lite with a JavaScript engine in one wheel,
so a chart is drawn without a browser, a Node install or the network.  The SVG it gives is inlined
in the report and the console's pages: a surveillance network is closed, and nothing of a page
may come from elsewhere.  :func:`svg` refuses every URL a spec could name
(``allowed_base_urls=[]``): the data are always inline values.

The helpers (:func:`bar`, :func:`stacked_bar`, :func:`line`) build the few charts pitwatch draws:
findings by rule, table, dealer or hour (stacked by severity), a 7-day trend, hands per hour, hold
against theory.  Severities keep one colour each everywhere (:data:`SEVERITY_COLOURS`).
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from pitwatch.config import SEVERITIES

# one colour per severity, most severe first (pitwatch.config.SEVERITIES), the console's too
SEVERITY_COLOURS = dict(zip(SEVERITIES, ("#b3261e", "#e8710a", "#f2c200", "#7a8791")))
WIDTH = 520
HEIGHT = 220
_FONT = "DejaVu Sans, Liberation Sans, Arial, sans-serif"   # a font the machine has: no web font
_CONFIG = {"font": _FONT, "view": {"stroke": None}, "axis": {"labelLimit": 220}}


class ChartError(ValueError):
    """A spec Vega-Lite cannot draw (a field it does not know, a mark it has not): the message is
    the renderer's first line."""


def svg(spec: Mapping[str, Any]) -> str:
    """The SVG text of Vega-Lite ``spec`` (a dict with its data inline as ``values``), drawn
    offline: any URL in the spec (data, image) is refused, never fetched."""
    import vl_convert

    try:
        return vl_convert.vegalite_to_svg(json.dumps(spec, default=str), allowed_base_urls=[])
    except ValueError as exc:
        raise ChartError(str(exc).splitlines()[0] if str(exc) else "Vega-Lite could not draw the chart") from None


def _spec(title: str, rows: Sequence[Mapping[str, Any]], mark: Any, encoding: dict,
          width: int = WIDTH, height: int = HEIGHT) -> dict:
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",   # a name, never fetched
        "title": title,
        "width": width,
        "height": height,
        "config": _CONFIG,
        "data": {"values": [dict(r) for r in rows]},
        "mark": mark,
        "encoding": encoding,
    }


def _severity_colour(field: str) -> dict:
    present = list(SEVERITY_COLOURS)
    return {"field": field, "type": "nominal", "title": "severity",
            "scale": {"domain": present, "range": [SEVERITY_COLOURS[s] for s in present]},
            "sort": present}


def bar(title: str, rows: Sequence[Mapping[str, Any]], category: str, value: str,
        category_title: str | None = None, value_title: str | None = None) -> dict:
    """Horizontal bars, one per ``category`` (rule, table, dealer), longest first."""
    return _spec(title, rows, {"type": "bar", "color": "#3b6ea8"}, {
        "y": {"field": category, "type": "nominal", "sort": "-x", "title": category_title or category},
        "x": {"field": value, "type": "quantitative", "title": value_title or value},
        "tooltip": [{"field": category}, {"field": value}],
    }, height=max(60, 18 * len({r[category] for r in rows})))


def stacked_bar(title: str, rows: Sequence[Mapping[str, Any]], category: str, value: str,
                stack: str = "severity", category_title: str | None = None, ordinal: bool = False) -> dict:
    """Bars of ``category`` (a rule, a table, a dealer; an hour when ``ordinal``: in its own order)
    stacked by ``stack`` (a severity: its colour)."""
    colour = _severity_colour(stack) if stack == "severity" else {"field": stack, "type": "nominal"}
    if ordinal:
        axis = {"x": {"field": category, "type": "ordinal", "title": category_title or category}}
        measure = {"y": {"field": value, "type": "quantitative", "title": value, "stack": "zero"}}
        height = HEIGHT
    else:
        axis = {"y": {"field": category, "type": "nominal", "sort": "-x", "title": category_title or category}}
        measure = {"x": {"field": value, "type": "quantitative", "title": value, "stack": "zero"}}
        height = max(60, 18 * len({r[category] for r in rows}))
    return _spec(title, rows, "bar", {**axis, **measure, "color": colour,
                                      "tooltip": [{"field": category}, {"field": stack}, {"field": value}]},
                 height=height)


def line(title: str, rows: Sequence[Mapping[str, Any]], x: str, y: str, series: str | None = None,
         x_type: str = "ordinal", y_title: str | None = None) -> dict:
    """A line of ``y`` over ``x`` (days of a trend, hours), one line per ``series`` when given
    (a severity keeps its colour; "actual" and "theory" for the hold)."""
    encoding: dict = {"x": {"field": x, "type": x_type, "title": x},
                      "y": {"field": y, "type": "quantitative", "title": y_title or y},
                      "tooltip": [{"field": x}, {"field": y}]}
    if series is not None:
        encoding["color"] = _severity_colour(series) if series == "severity" else {"field": series, "type": "nominal"}
        encoding["tooltip"].append({"field": series})
    return _spec(title, rows, {"type": "line", "point": True}, encoding)


def paired_bar(title: str, rows: Sequence[Mapping[str, Any]], category: str, value: str, pair: str,
               value_title: str | None = None) -> dict:
    """Bars side by side per ``category``, one per value of ``pair`` (a table's hold %: actual and
    theory), not stacked: the two are compared, never added."""
    return _spec(title, rows, "bar", {
        "x": {"field": category, "type": "nominal", "title": category},
        "xOffset": {"field": pair},
        "y": {"field": value, "type": "quantitative", "title": value_title or value},
        "color": {"field": pair, "type": "nominal", "title": ""},
        "tooltip": [{"field": category}, {"field": pair}, {"field": value}],
    })
