"""console/charts.py: Vega-Lite specs drawn to SVG in this process, offline — a URL in a spec is
refused and never fetched, and drawing needs no network at all."""
from __future__ import annotations

import http.server
import subprocess
import sys
import threading

import pytest

from pitwatch.console import charts

FINDINGS_BY_RULE = [{"rule": "PAYOUT", "findings": 7}, {"rule": "BURN_SKIPPED", "findings": 2}]


def test_a_bar_chart_of_findings_by_rule_is_svg_naming_every_rule():
    svg = charts.svg(charts.bar("Findings by rule", FINDINGS_BY_RULE, "rule", "findings"))
    assert svg.lstrip().startswith("<svg")
    assert "PAYOUT" in svg and "BURN_SKIPPED" in svg and "Findings by rule" in svg


def test_a_stacked_bar_draws_a_severity_in_its_colour_and_an_absent_one_in_none():
    rows = [{"hour": "21", "severity": "critical", "findings": 3}, {"hour": "22", "severity": "minor", "findings": 1}]
    svg = charts.svg(charts.stacked_bar("By hour", rows, "hour", "findings", ordinal=True))
    bars = [line for line in svg.split("<path") if 'aria-roledescription="bar"' in line]
    assert any(charts.SEVERITY_COLOURS["critical"] in b for b in bars)
    assert any(charts.SEVERITY_COLOURS["minor"] in b for b in bars)
    assert not any(charts.SEVERITY_COLOURS["major"] in b for b in bars)   # the legend names it; no bar has it


def test_a_line_of_a_seven_day_trend_names_its_days():
    rows = [{"day": f"2026-11-{d}", "findings": d % 5} for d in range(22, 29)]
    svg = charts.svg(charts.line("7-day trend", rows, "day", "findings"))
    assert "2026-11-22" in svg and "2026-11-28" in svg


def test_a_spec_naming_a_url_is_refused_and_nothing_is_fetched():
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            asked.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'[{"rule": "X", "findings": 1}]')

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        spec = charts.bar("remote", [], "rule", "findings")
        spec["data"] = {"url": f"http://127.0.0.1:{server.server_port}/data.json"}
        with pytest.raises(charts.ChartError):
            charts.svg(spec)
    finally:
        server.shutdown()
    assert asked == []


def test_a_spec_vega_lite_cannot_draw_is_one_chart_error():
    with pytest.raises(charts.ChartError):
        charts.svg({"mark": "no-such-mark", "data": {"values": []}})


def test_charts_draw_with_no_network_at_all():
    """In a network namespace of its own (no interface but a down loopback), a chart still draws."""
    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -n is not allowed here (needs root or user namespaces)")
    code = ("from pitwatch.console import charts; import sys; "
            "sys.stdout.write(charts.svg(charts.bar('t', [{'rule': 'CUT', 'findings': 1}], 'rule', 'findings')))")
    done = subprocess.run(["unshare", "-n", sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "<svg" in done.stdout and "CUT" in done.stdout


def test_a_hostile_name_is_text_in_the_svg_never_markup():
    """A dealer's name from an operator's roster is drawn as text: the SVG escapes it."""
    svg = charts.svg(charts.bar("By dealer", [{"dealer": "<script>alert(1)</script>", "findings": 1},
                                              {"dealer": "Ana Rivera", "findings": 2}], "dealer", "findings"))
    assert "<script" not in svg and "&lt;script&gt;" in svg and "Ana Rivera" in svg
