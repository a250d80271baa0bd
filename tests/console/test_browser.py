"""The console in a real browser (Debian's chromium through chromium-driver): logging in, the Live
page receiving an alert a real ``pitwatch watch`` raised, Runs & health; no request leaves
127.0.0.1 and the browser's console stays free of errors.  A screenshot of each page is written
under the test's temp folder (``docs/screenshots/`` holds one of each, for docs/console.md)."""
from __future__ import annotations

import time

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as seen
from selenium.webdriver.support.ui import WebDriverWait

from tests.watch.conftest import append_lines


def _only_here(browser, base: str) -> None:
    """Every URL the browser asked for is the console's (or data: inline), and no console error."""
    browser.collect_logs()
    assert browser.requested, "the performance log saw no request: the check would prove nothing"
    elsewhere = [u for u in browser.requested if not (u.startswith(base + "/") or u == base or u.startswith("data:"))]
    assert elsewhere == []
    errors = [m for m in browser.console_messages if m.get("level") == "SEVERE"]
    assert errors == []


@pytest.mark.slow
def test_log_in_and_read_runs_and_health_in_the_browser(floor_lake, serve, browser):
    served = serve(floor_lake)
    d = browser.driver
    browser.login(served.url, "adam", "wrong-password")
    assert "wrong user name or password" in d.find_element(By.CSS_SELECTOR, ".refused").text
    browser.shot("login-refused")
    browser.collect_logs()      # the refusal is a 401 the browser logs: that one, and only it, is expected
    assert [m["message"].split(" - ")[-1] for m in browser.console_messages] == [
        "Failed to load resource: the server responded with a status of 401 (Unauthorized)"]
    browser.console_messages.clear()
    d.delete_all_cookies()
    d.get(served.url + "/login")
    browser.shot("login")
    browser.login(served.url, "adam")
    WebDriverWait(d, 20).until(seen.url_to_be(served.url + "/live"))
    WebDriverWait(d, 20).until(lambda drv: drv.find_element(By.ID, "stream-state").text == "following")
    browser.shot("live")
    d.find_element(By.LINK_TEXT, "Runs & health").click()
    WebDriverWait(d, 20).until(seen.url_to_be(served.url + "/health"))
    runs = d.find_elements(By.CSS_SELECTOR, "#runs tbody tr")
    commands = " ".join(r.text for r in runs)
    assert "pitwatch run" in commands or "run" in commands
    assert "succeeded" in commands
    d.find_element(By.ID, "run-verify").click()
    WebDriverWait(d, 120).until(lambda drv: "checked " in drv.find_element(By.ID, "verify").text)
    assert d.find_element(By.CSS_SELECTOR, "#verify .intact").text.startswith("Intact")
    browser.shot("health")
    _only_here(browser, served.url)


@pytest.mark.slow
def test_a_live_alert_appears_in_the_browser_when_a_watched_feed_line_completes_its_evidence(
        floor_lake, serve, browser, scenario, start_watch, tmp_path):
    feeds, alerts_file = tmp_path / "feeds", tmp_path / "alerts.jsonl"
    feeds.mkdir()           # the watcher follows the folder from its start
    alerts_file.write_text("")
    served = serve(floor_lake, "--alerts-file", alerts_file)
    d = browser.driver
    browser.login(served.url, "vera")
    WebDriverWait(d, 20).until(lambda drv: drv.find_element(By.ID, "stream-state").text == "following")
    before = len(d.find_elements(By.CSS_SELECTOR, "#alert-rows tr.alert"))
    w = start_watch(feeds, "--lake", tmp_path / "watch-lake", "--alerts-file", alerts_file, "--reorder-wait", "0")
    dealer = scenario["DT-1-BAC-A"]
    cut = next(i for i, line in enumerate(dealer) if '"type": "cut"' in line)
    append_lines(feeds, [("DT-1-BAC-A", line) for line in dealer[:cut + 1]])
    w.wait_for(lambda: any(a["rule_id"] == "CUT_PLACEMENT" for a in w.alerts), "CUT_PLACEMENT")
    raised = time.monotonic()
    alert = next(a for a in w.alerts if a["rule_id"] == "CUT_PLACEMENT")
    row = WebDriverWait(d, 20).until(lambda drv: drv.find_elements(
        By.CSS_SELECTOR, f'#alert-rows tr[data-finding="{alert["finding_id"]}"]'))[0]
    seen_after = time.monotonic() - raised
    assert len(d.find_elements(By.CSS_SELECTOR, "#alert-rows tr.alert")) > before
    assert row == d.find_elements(By.CSS_SELECTOR, "#alert-rows tr.alert")[0]      # newest first
    assert f"sev-{alert['severity']}" in row.get_attribute("class")
    assert "BAC-A" in row.text and alert["title"] in row.text
    link = row.find_element(By.CSS_SELECTOR, "td.what a")
    assert link.get_attribute("href") == f"{served.url}/findings/{alert['finding_id']}"
    browser.shot("live-alert")
    assert w.stop() == 0
    assert seen_after < 5.0         # a liveness bound; bench/console.py measures the 250 ms
    _only_here(browser, served.url)


def _card_alert(rule_id: str, finding_id: str, provisional_id: str, severity: str, ts: str, **kw) -> str:
    """A provisional card alert or its clearing as the watcher writes them (live/provisional.py)."""
    import json

    return json.dumps({"finding_id": finding_id, "provisional_id": provisional_id, "rule_id": rule_id,
                       "title": kw.pop("title"), "severity": severity, "game": "baccarat", "table_id": "BAC-07",
                       "round_id": "R-1", "seat": None, "dealer_id": "D-1", "ts": ts, "evidence_from": ts,
                       "live_only": True, **kw}) + "\n"


@pytest.mark.slow
def test_a_provisional_card_alert_flashes_and_is_struck_through_when_cleared(small_lake, serve, browser, tmp_path):
    alerts_file = tmp_path / "alerts.jsonl"
    alerts_file.write_text("")
    served = serve(small_lake, "--alerts-file", alerts_file)
    d = browser.driver
    browser.login(served.url, "vera")
    WebDriverWait(d, 20).until(lambda drv: drv.find_element(By.ID, "stream-state").text == "following")
    d.find_element(By.ID, "sound").click()          # the operator turns the sound on (a user gesture)
    with open(alerts_file, "a") as f:
        f.write(_card_alert("CARD_DISAGREEMENT", "p-1", "p-1", "critical", "2026-11-28T20:05:00Z",
                            title="Shoe and terminal disagree on a card", expected="9c", actual="8c"))
    row = WebDriverWait(d, 20).until(lambda drv: drv.find_elements(By.CSS_SELECTOR, 'tr[data-finding="p-1"]'))[0]
    classes = row.get_attribute("class").split()
    assert {"provisional", "flash", "sev-critical"} <= set(classes) and "cleared" not in classes
    assert "provisional" in row.text
    assert row.find_elements(By.CSS_SELECTOR, "td.what a") == []       # live only: no finding page to open
    browser.shot("live-provisional")
    with open(alerts_file, "a") as f:
        f.write(_card_alert("CARD_DISAGREEMENT_CLEARED", "c-1", "p-1", "info", "2026-11-28T20:05:04Z",
                            title="Card disagreement cleared", expected="9c", actual="the shoe's read was late"))
    WebDriverWait(d, 20).until(lambda drv: "cleared" in row.get_attribute("class").split())
    cleared = d.find_element(By.CSS_SELECTOR, 'tr[data-finding="c-1"]')
    assert "cleared" in cleared.text and "flash" not in cleared.get_attribute("class")
    assert row.value_of_css_property("text-decoration-line") == "line-through" or \
        "line-through" in row.find_element(By.CSS_SELECTOR, "td").value_of_css_property("text-decoration")
    d.get(served.url + "/live")                     # opened again: the page itself strikes it through
    again = d.find_element(By.CSS_SELECTOR, 'tr[data-finding="p-1"]')
    assert "cleared" in again.get_attribute("class").split()
    browser.shot("live-cleared")
    _only_here(browser, served.url)
