"""``pitwatch report`` end to end: a simulated baccarat floor with injected faults (critical card
switches, major wrong payouts and drawing-rule breaches), the nightly batch, one finding reviewed, then the
day's report checked against the simulator's ground truth: its counts, a round picture for every
open critical and major finding of a round, no reference outside the file, and the PDF Chromium
prints.  The user's mistakes are one Error line, exit 2."""
from __future__ import annotations

import collections
import html.parser
import json
import os
import re
import shutil

import pytest

from pitwatch.lake import Lake
from pitwatch.queries.lake_views import connect, run_sql
from pitwatch.rules.catalog import RULE_BY_ID
from pitwatch.simulator import simulate
from tests.conftest import run_pitwatch as pitwatch

DAY = "2026-11-28"
PICTURED = ("critical", "major")


@pytest.fixture(scope="module")
def floor(tmp_path_factory):
    base = tmp_path_factory.mktemp("report")
    inbox, lake = base / "inbox", base / "lake"
    simulate(inbox, tables={"baccarat": 1}, hours=1.0, seed=3,
             faults={"SHOE_CARD_MISMATCH": 0.3, "PAYOUT": 0.1, "DRAWING_RULE": 0.1})
    run = pitwatch("run", "--day", DAY, "--inbox", inbox, "--lake", lake, "--quiet")
    assert run.returncode == 0, run.stderr
    con = connect(Lake.at(lake))
    answer = run_sql(con, "select * from findings order by ts, finding_id")
    con.close()
    findings = [dict(zip(answer.columns, r)) for r in answer.rows]
    reviewed = next(f for f in findings if f["rule_id"] == "PAYOUT")
    r = pitwatch("review", reviewed["finding_id"], "--lake", lake, "--disposition", "confirmed", "--by", "A. Ortiz",
                 "--reason", "DEALER_ERROR")
    assert r.returncode == 0, r.stderr
    truth = [json.loads(line) for line in (inbox / "truth.jsonl").read_text().splitlines()]
    return {"base": base, "lake": lake, "findings": findings, "reviewed": reviewed["finding_id"], "truth": truth}


@pytest.fixture(scope="module")
def written(floor):
    out = floor["base"] / "report.html"
    r = pitwatch("report", "--day", DAY, "--lake", floor["lake"], "--out", out)
    assert r.returncode == 0, r.stderr
    return out.read_text(encoding="utf-8")


class _Page(html.parser.HTMLParser):
    """Every src/href of the page, every tile's label and value, every finding pictured."""

    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.tiles: dict[str, str] = {}
        self.findings: list[str] = []
        self.rounds: list[str] = []
        self._tile: str | None = None
        self._in_value = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.links += [v for k, v in attrs if k in ("src", "href", "xlink:href", "action", "srcset") and v is not None]
        if "data-tile" in a:
            self._tile = a["data-tile"]
        if a.get("class") == "value" and self._tile:
            self._in_value = True
        if "data-finding" in a:
            self.findings.append(a["data-finding"])
        if a.get("class") == "round-picture" and a.get("id", "").startswith("round-"):
            self.rounds.append(a["id"])

    def handle_data(self, data):
        if self._in_value and self._tile:
            self.tiles[self._tile] = data
            self._in_value, self._tile = False, None


def _page(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    return page


@pytest.mark.slow
def test_the_report_holds_the_truths_counts_by_severity_and_the_open_ones(floor, written):
    truth = collections.Counter(RULE_BY_ID[t["rule_id"]].severity for t in floor["truth"])
    assert truth["critical"] and truth["major"], "the floor needs critical and major faults"
    page = _page(written)
    for severity in ("critical", "major", "minor", "info"):
        assert page.tiles[severity] == f"{truth[severity]:,}", severity
    assert page.tiles["open"] == f"{len(floor['truth']) - 1:,}"         # one reviewed
    assert page.tiles["rounds"] != "0"


@pytest.mark.slow
def test_every_open_critical_and_major_finding_is_pictured_and_the_reviewed_one_is_not(floor, written):
    page = _page(written)
    want = [f["finding_id"] for f in floor["findings"]
            if f["severity"] in PICTURED and f["finding_id"] != floor["reviewed"]]
    assert page.findings == want
    assert floor["reviewed"] not in page.findings
    with_round = [f for f in floor["findings"] if f["finding_id"] in want and f["round_id"]]
    assert sorted(page.rounds) == sorted("round-" + f["finding_id"] for f in with_round)
    # each card switch: the picture marks a draw where the shoe and the terminal differ
    for f in with_round:
        if f["rule_id"] == "SHOE_CARD_MISMATCH":
            section = written.split(f'id="round-{f["finding_id"]}"', 1)[1].split("</section>", 1)[0]
            assert 'class="differs cited-row"' in section


@pytest.mark.slow
def test_the_report_names_nothing_outside_itself(written):
    page = _page(written)
    outside = [link for link in page.links if not link.startswith(("#", "data:"))]
    assert outside == []
    assert "<script" not in written and "@import" not in written and "url(" not in written
    assert written.count("<svg") == 7             # rule, table, dealer, hour, trend, hands per hour, hold


@pytest.mark.slow
def test_times_are_the_tables_zone_to_the_second_named(floor, written, tmp_path):
    """The floor's lake shows UTC; with BAC-01 shown in America/Puerto_Rico (the lake's display
    settings), its findings, rounds and video windows read AST, and no +00:00 offset is left."""
    from pitwatch.lake import settings as lake_settings
    from pitwatch.schemas.decode import GamingDayConfig

    assert " UTC</span>" in written and " AST" not in written
    lake = tmp_path / "lake"
    shutil.copytree(floor["lake"], lake)
    zone, _ = lake_settings.display_zones(Lake.at(lake))
    settings = json.loads((lake / "settings.json").read_text())
    lake_settings.record(Lake.at(lake), GamingDayConfig(timezone=zone, cutoff=settings["cutoff"]),
                         "20261129T070000Z-00000000", display={"BAC-01": "America/Puerto_Rico"})
    r = pitwatch("report", "--day", DAY, "--lake", lake, "--out", tmp_path / "r.html")
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    pictures = text.split('<h2>Open critical and major findings', 1)[1].split("<h2>Changed since", 1)[0]
    assert re.search(r"Video: 2026-11-2[78] \d\d:\d\d:\d\d AST to 2026-11-2[78] \d\d:\d\d:\d\d AST", pictures)
    assert " UTC" not in pictures and "+00:00" not in text


@pytest.mark.slow
def test_the_pdf_is_a_pdf_of_pages(floor, written):
    if shutil.which("chromium") is None:
        pytest.fail("Debian's chromium is not installed (.ci/run installs it)")
    out, pdf = floor["base"] / "printed.html", floor["base"] / "report.pdf"
    r = pitwatch("report", "--day", DAY, "--lake", floor["lake"], "--out", out, "--pdf", pdf)
    assert r.returncode == 0, r.stderr
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-")
    pages = re.findall(rb"/Type\s*/Page(?![s\w])", data)       # each page object (not the /Pages tree)
    assert len(pages) > 1, "the report of a day with findings runs to more than one page"


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["--day", "2026-13-01"], "--day '2026-13-01': not a gaming day"),
    (["--day", "2026-11-20"], "--day 2026-11-20: the lake holds no event of this gaming day"),
    (["--day", DAY, "--out", "LAKE/r.html"], "is inside the lake"),
    (["--day", DAY, "--pdf", "LAKE/r.pdf"], "is inside the lake"),
])
def test_a_users_mistake_is_one_error_line_and_exit_2(floor, args, message):
    lake = str(floor["lake"])
    args = [a.replace("LAKE", lake) for a in args]
    if "--out" not in args:
        args += ["--out", str(floor["base"] / "mistake.html")]
    r = pitwatch("report", "--lake", lake, *args)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("Error: "), r.stderr
    assert message in r.stderr
    assert not os.path.exists(floor["base"] / "mistake.html")


def test_a_folder_that_is_no_lake_is_one_error_line(tmp_path):
    r = pitwatch("report", "--day", DAY, "--lake", tmp_path, "--out", tmp_path.parent / "r.html")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not a pitwatch lake" in r.stderr


def test_a_pdf_without_chromium_is_refused_before_the_lake_is_read(tmp_path):
    r = pitwatch("report", "--day", DAY, "--lake", tmp_path / "lake", "--out", tmp_path / "r.html",
                 "--pdf", tmp_path / "r.pdf", env={"PATH": str(tmp_path)})
    assert r.returncode == 2 and "--pdf needs Debian's chromium" in r.stderr
    assert not (tmp_path / "r.html").exists()


@pytest.mark.slow
def test_verify_since_an_anchor_checks_what_came_after_it_and_says_so(floor, written, tmp_path):
    from pitwatch.lake import anchor as anchors

    assert "the whole lake." in written and "verify --since" not in written
    anchor = tmp_path / "anchor.jsonl"
    entry = anchors.append(str(anchor), Lake.at(floor["lake"]))
    r = pitwatch("report", "--day", DAY, "--lake", floor["lake"], "--out", tmp_path / "r.html",
                 "--verify-since", anchor)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert 'data-verify="intact"' in text
    assert f"what came after the anchored run {entry['run_id']} (verify --since)" in text


def test_a_key_without_verify_since_is_one_error_line(tmp_path):
    r = pitwatch("report", "--day", DAY, "--lake", tmp_path / "lake", "--out", tmp_path / "r.html",
                 "--key", tmp_path / "k")
    assert r.returncode == 2 and r.stderr == "Error: --key goes with --verify-since (it checks the anchor's signatures)\n"


@pytest.mark.slow
def test_a_lake_not_intact_is_reported_so_and_exits_5(floor, written, tmp_path):
    assert 'data-verify="intact"' in written
    lake = tmp_path / "lake"
    shutil.copytree(floor["lake"], lake)
    stray = next((lake / "findings").rglob("*.parquet"))
    shutil.copy(stray, stray.with_name("planted.parquet"))      # a file no run wrote: verify names it
    r = pitwatch("report", "--day", DAY, "--lake", lake, "--out", tmp_path / "r.html")
    assert r.returncode == 5 and r.stderr.splitlines()[-1].startswith("Error: the lake is not intact"), r.stderr
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert 'data-verify="not intact"' in text and "planted.parquet" in text
