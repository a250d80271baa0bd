"""The console's harness: a real ``pitwatch serve`` process on a lake, an HTTP client that logs in
as a person would (cookies, the forms' CSRF token), and a headless Debian ``chromium`` driven
through ``chromium-driver`` (selenium) with its console and network logs on, writing a screenshot
of each page it is asked to under the test's temp folder.

Lakes: the hand-built lake of :mod:`tests.queries.lakes` (fast: the server's own behaviour) and
the simulated floor ``pitwatch demo`` writes and replays (:func:`tests.queries.conftest.demo_run`,
run once per session; the browser tests' pages).  The live alert comes from a real ``pitwatch
watch`` (:func:`tests.watch.conftest.start_watch`) over the simulated scenario of ``tests/watch``.
"""
from __future__ import annotations

import http.cookiejar
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from pitwatch.console import auth
from tests.conftest import process_env
from tests.queries.conftest import demo_run  # noqa: F401  (the simulated, replayed floor: a session fixture)
from tests.queries.lakes import build_lake
from tests.watch.conftest import scenario, start_watch  # noqa: F401  (a real pitwatch watch, its floor)

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: the people of every test lake: name -> (role, password)
PEOPLE = {"vera": ("viewer", "vera-password"), "rita": ("reviewer", "rita-password"),
          "adam": ("admin", "adam-password")}
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def add_people(lake: str) -> str:
    """The users file beside ``lake`` with :data:`PEOPLE`; its path."""
    path = auth.default_users_path(lake)
    for name, (role, password) in PEOPLE.items():
        auth.add_user(path, name, role, password, replace=True)
    return path


class Served:
    """A ``pitwatch serve`` process; its stderr collected by a thread."""

    def __init__(self, lake: str, *args: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "pitwatch.cli", "serve", "--lake", lake,
                                      "--port", str(self.port), *args],
                                     env=process_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.errors: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._wait_ready()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.errors.append(line.rstrip("\n"))

    def _wait_ready(self, timeout: float = 60.0) -> None:
        end = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                self._reader.join(5)
                raise AssertionError(f"pitwatch serve exited ({self.proc.returncode}): {self.errors[-10:]}")
            try:
                with urllib.request.urlopen(self.url + "/login", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > end:
                raise AssertionError(f"pitwatch serve did not answer in {timeout} s: {self.errors[-10:]}")
            time.sleep(0.1)

    def stop(self, sig=signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        rc = self.proc.wait(timeout)
        self._reader.join(5)
        return rc


@pytest.fixture
def serve():
    """``serve(lake, *args) -> Served``: a real ``pitwatch serve``, stopped (killed if need be) after the test."""
    started: list[Served] = []

    def start(lake, *args) -> Served:
        s = Served(str(lake), *map(str, args))
        started.append(s)
        return s

    yield start
    for s in started:
        if s.proc.poll() is None:
            s.proc.terminate()
            try:
                s.proc.wait(15)
            except subprocess.TimeoutExpired:
                s.proc.kill()
                s.proc.wait()


@pytest.fixture(scope="module")
def small_lake(tmp_path_factory) -> str:
    """The hand-built lake of tests/queries/lakes.py with :data:`PEOPLE` as its users."""
    lake = build_lake(str(tmp_path_factory.mktemp("console") / "lake"))
    add_people(lake)
    return lake


@pytest.fixture(scope="module")
def floor_lake(demo_run, tmp_path_factory) -> str:  # noqa: F811
    """A copy of the lake ``pitwatch demo`` simulated and replayed (reviews, roster and all), with
    :data:`PEOPLE` as its users: a test may write to it."""
    folder, _result = demo_run
    lake = tmp_path_factory.mktemp("floor") / "lake"
    shutil.copytree(Path(folder) / "demo" / "lake", lake)
    add_people(str(lake))
    return str(lake)


class Client:
    """An HTTP client with a cookie jar, as a browser without scripts: it follows redirects, keeps the
    session, and posts forms with the CSRF token of the last page it read."""

    def __init__(self, base: str):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.token = ""

    def _answer(self, request) -> tuple[int, str, str, dict]:
        try:
            with self.opener.open(request, timeout=30) as r:
                body, status, url, headers = r.read().decode(), r.status, r.url, dict(r.headers)
        except urllib.error.HTTPError as e:
            body, status, url, headers = e.read().decode(), e.code, e.url, dict(e.headers)
        found = re.search(r'name="csrf_token" value="([^"]+)"', body)
        if found:
            self.token = found.group(1)
        return status, url[len(self.base):] if url.startswith(self.base) else url, body, headers

    def get(self, path: str, accept: str = "text/html") -> tuple[int, str, str, dict]:
        return self._answer(urllib.request.Request(self.base + path, headers={"Accept": accept}))

    def post(self, path: str, form: dict, token: bool = True) -> tuple[int, str, str, dict]:
        data = {**form, **({"csrf_token": self.token} if token else {})}
        return self._answer(urllib.request.Request(self.base + path, data=urllib.parse.urlencode(data).encode(),
                                                   headers={"Accept": "text/html"}))

    def login(self, name: str, password: str | None = None) -> tuple[int, str, str, dict]:
        self.get("/login")
        return self.post("/login", {"name": name, "password": PEOPLE[name][1] if password is None else password,
                                    "next": "/live"})


@pytest.fixture
def client():
    """``client(served) -> Client``."""
    return lambda served: Client(served.url)


# ---------------------------------------------------------------- the browser


class Browser:
    """A headless chromium (selenium) with its browser and performance logs, and screenshots."""

    def __init__(self, shots: Path):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                    "--window-size=1440,900", "--no-first-run", "--disable-extensions",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--disable-default-apps", "--autoplay-policy=no-user-gesture-required"):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        self.driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
        self.driver.set_page_load_timeout(30)
        self.shots = shots
        self.shots.mkdir(parents=True, exist_ok=True)
        self.console_messages: list[dict] = []
        self.requested: list[str] = []

    def shot(self, name: str) -> Path:
        """A screenshot of the page as it is, ``<test tmp>/screenshots/<name>.png``."""
        path = self.shots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def collect_logs(self) -> None:
        """The browser's console messages and every URL it requested since the last call."""
        import json

        self.console_messages.extend(self.driver.get_log("browser"))
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                self.requested.append(message["params"]["request"]["url"])

    def login(self, base: str, name: str, password: str | None = None) -> None:
        from selenium.webdriver.common.by import By

        self.driver.get(base + "/login")
        self.driver.find_element(By.ID, "name").send_keys(name)
        self.driver.find_element(By.ID, "password").send_keys(PEOPLE[name][1] if password is None else password)
        self.driver.find_element(By.ID, "login").click()

    def quit(self) -> None:
        self.driver.quit()


@pytest.fixture
def browser(tmp_path):
    """A headless chromium for the test; its screenshots under ``tmp_path/screenshots``."""
    if not Path(CHROMIUM).exists() or not Path(CHROMEDRIVER).exists():
        pytest.fail(f"the browser tests need Debian's chromium and chromium-driver ({CHROMIUM}, {CHROMEDRIVER}): "
                    "apt-get install chromium chromium-driver (.ci/run does)")
    b = Browser(tmp_path / "screenshots")
    yield b
    b.quit()
