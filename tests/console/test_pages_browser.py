"""The analyst pages in a real browser (headless Debian chromium through chromium-driver): each page
drawn with no console error and no request to another host, a screenshot of each under the test's
temp folder; the finding page's review form used by a reviewer, and absent for a viewer."""
from __future__ import annotations

import shutil
from urllib.parse import urlsplit

import pytest

from pitwatch.lake import Lake
from tests.console.conftest import add_people
from tests.console.test_pages_served import _a_finding, run_lake  # noqa: F401  (the fixture: a lake a run wrote)

pytestmark = pytest.mark.slow

PAGES = {"findings": "/findings?day=2026-11-28", "finding": "/findings/f-4?day=2026-11-28",
         "round": "/rounds/BAC-07/R-1?day=2026-11-28", "pack": "/packs/BAC-07/P-1?day=2026-11-28",
         "dealers": "/dealers?day=2026-11-28"}


def _nothing_left_the_machine(browser) -> None:
    browser.collect_logs()
    hosts = {urlsplit(u).hostname for u in browser.requested if urlsplit(u).scheme in ("http", "https", "ws", "wss")}
    assert hosts <= {"127.0.0.1"}, hosts
    errors = [m for m in browser.console_messages if m.get("level") == "SEVERE"]
    assert errors == [], errors


def test_each_analyst_page_draws_in_the_browser_with_nothing_from_another_host(small_lake, serve, browser):
    from selenium.webdriver.common.by import By

    served = serve(small_lake)
    browser.login(served.url, "vera")
    for name, path in PAGES.items():
        browser.driver.get(served.url + path)
        assert browser.driver.find_element(By.TAG_NAME, "h1").text, name
        assert browser.shot(name).stat().st_size > 0
    browser.driver.get(served.url + PAGES["finding"])
    picture = browser.driver.find_element(By.CSS_SELECTOR, ".round-picture")
    assert "9c" in picture.text and "8c" in picture.text          # the shoe's card beside the terminal's
    assert browser.driver.find_elements(By.CSS_SELECTOR, "form.review-form") == []     # a viewer: no form
    _nothing_left_the_machine(browser)


def test_a_reviewer_records_a_review_with_the_finding_page_s_form(run_lake, serve, browser, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from pitwatch.lake.reviews import latest_of

    lake = str(tmp_path / "lake")
    shutil.copytree(run_lake, lake)
    add_people(lake)
    fid, day, table, round_id, pack = _a_finding(lake, "table_id", "round_id", "pack_id")
    served = serve(lake)
    browser.login(served.url, "rita")
    for name, path in {"findings": f"/findings?day={day}", "round": f"/rounds/{table}/{round_id}?day={day}",
                       "pack": f"/packs/{table}/{pack}?day={day}", "dealers": f"/dealers?day={day}",
                       "finding": f"/findings/{fid}?day={day}"}.items():     # the simulated floor's pages
        browser.driver.get(served.url + path)
        assert browser.driver.find_element(By.TAG_NAME, "h1").text, name
        browser.shot(f"floor-{name}")
    browser.driver.get(f"{served.url}/findings/{fid}?day={day}")
    form = browser.driver.find_element(By.CSS_SELECTOR, "form.review-form")
    Select(form.find_element(By.NAME, "disposition")).select_by_visible_text("escalated")
    form.find_element(By.NAME, "note").send_keys("patron <b>paid</b> twice")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    reviews = browser.driver.find_element(By.CSS_SELECTOR, "table.reviews").text
    assert "rita escalated" in reviews and "patron <b>paid</b> twice" in reviews      # shown as typed, escaped
    browser.shot("finding-reviewed")
    latest = latest_of(Lake.at(lake), [fid])[fid]
    assert (latest["reviewer"], latest["disposition"], latest["note"]) == ("rita", "escalated", "patron <b>paid</b> twice")
    _nothing_left_the_machine(browser)
