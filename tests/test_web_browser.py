"""The dashboard as a person uses it, in a real headless Chromium (Debian's ``chromium`` and
``chromium-driver``, through Selenium): ``make test-browser``. Every browser and server is
stopped at the end of each test."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from supervisor import Team
from tests.runtime_helpers import running_team, wait_for
from tests.web_helpers import Server, serving

pytestmark = pytest.mark.browser

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        pytest.fail("no chromium or chromedriver: 'make test-browser' installs them (Debian packages)")
    profile = tmp_path / "chromium-profile"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument("--window-size=1400,1000")
    service = Service(executable_path=driver)
    chrome = webdriver.Chrome(options=options, service=service)
    try:
        yield chrome
    finally:
        chrome.quit()
        # Anything of this browser that outlived quit() (a renderer, a crashpad handler).
        for proc in psutil.process_iter(["pid", "cmdline"]):
            if str(profile) in " ".join(proc.info["cmdline"] or []):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)


def shown(browser: WebDriver, selector: str, timeout: float = 30) -> str:
    """The text of the first element matching ``selector``, once the page shows it (read
    again if the page redrew it meanwhile: the live parts are redrawn as the team changes)."""

    def text(b: WebDriver) -> str | None:
        try:
            found = b.find_elements(By.CSS_SELECTOR, selector)
            return found[0].text if found else None
        except StaleElementReferenceException:
            return None

    found: str = WebDriverWait(browser, timeout).until(lambda b: (t := text(b)) is not None and (t,))[0]
    return found


def texts(browser: WebDriver, selector: str) -> list[str]:
    """The texts of every element matching ``selector``, read at one moment (in the page)."""
    found: list[str] = browser.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map((e) => e.innerText)", selector
    )
    return found


def click(browser: WebDriver, selector: str) -> None:
    """Click what ``selector`` finds; again if the page redrew it under the click (a live
    table is redrawn whenever the team changes)."""

    def clicked(b: WebDriver) -> bool:
        try:
            b.find_element(By.CSS_SELECTOR, selector).click()
        except StaleElementReferenceException:
            return False
        return True

    WebDriverWait(browser, 30).until(clicked)


def open_page(browser: WebDriver, server: Server, team: str) -> None:
    browser.get(server.url)  # the printed address: its token is kept for the tab, then it is gone
    assert "token=" not in browser.current_url
    shown(browser, f'#teams a[data-team="{team}"]')
    shown(browser, "#live.on")  # the events stream is open


def test_the_page_lists_members_and_tasks_and_a_message_appears_without_a_reload(
    tmp_path: Path, browser: WebDriver
) -> None:
    with running_team(tmp_path / "root") as team, serving(team.root) as server:
        # The lead holds #1, so #2 waits for it and bob can claim neither: the board stays put.
        first = team.tasks.create("Gather", "first")
        team.tasks.claim(first.id, "team-lead")
        team.tasks.create("Report", "after it", blocked_by=[first.id])
        team.spawn("bob", prompt="Answer messages.")
        open_page(browser, server, "t")
        shown(browser, '#members tr[data-member="bob"]')
        card = shown(browser, '#board [data-status="pending"] li[data-task="2"]')
        assert card.startswith("#2 Report") and "after #1" in card
        assert "team-lead" in shown(browser, '#board [data-status="in_progress"] li[data-task="1"]')
        shown(browser, '#graph g[data-task="2"]')
        browser.execute_script("window.stillTheSamePage = true")
        team.send("bob", "are you there?", "ping")
        reply = shown(browser, '#messages li[data-from="bob"][data-to="team-lead"]:not(.idle_notification)')
        assert "bob received your message: are you there?" in reply
        assert browser.execute_script("return window.stillTheSamePage") is True
        # The teammate's state and the lead's question, readable, not JSON.
        shown(browser, '#messages li.message[data-from="team-lead"][data-to="bob"]')
        assert not [t for t in texts(browser, "#messages .text") if t.startswith("{")]


def test_approve_on_a_pending_permission_request_lets_the_teammate_go_on(
    tmp_path: Path, browser: WebDriver
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "made.txt"
    with running_team(tmp_path / "root") as team, serving(team.root) as server:
        team.spawn("dev", prompt="p", permission_mode="acceptEdits")
        open_page(browser, server, "t")
        task = team.tasks.create("Write outside", metadata={"command": f"echo approved > {target}"})
        team.wake("*")
        card = shown(browser, "#requests .request")
        assert "dev asks to run Bash" in card and str(target) in card
        assert not target.exists()  # it waits for the answer
        click(browser, "#requests .request button.approve")
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=30)
        assert target.read_text() == "approved\n"
        transcript = (team.paths.transcript("dev")).read_text()
        assert f"echo approved > {target}" in transcript and "Permission denied" not in transcript
        assert not team.pending_requests()
        WebDriverWait(browser, 30).until(lambda b: not b.find_elements(By.CSS_SELECTOR, "#requests .request"))
        # Its transcript on the page: the tool it was allowed, called with that input.
        click(browser, '#members tr[data-member="dev"] a.open-transcript')
        shown(browser, "#transcript .part.tool-use")
        calls = texts(browser, "#transcript .part.tool-use")
        assert [c for c in calls if c.startswith("→ Bash") and f"echo approved > {target}" in c], calls


def test_sending_from_the_form_reaches_the_inbox_and_a_task_is_made(
    root: Path, team: str, browser: WebDriver
) -> None:
    with serving(root) as server:
        open_page(browser, server, team)
        shown(browser, '#send-form select option[value="alice"]')
        Select(browser.find_element(By.CSS_SELECTOR, "#send-form select")).select_by_value("alice")
        form = browser.find_element(By.ID, "send-form")
        form.find_element(By.NAME, "summary").send_keys("from the page")
        form.find_element(By.NAME, "text").send_keys("hello alice, from the browser")
        form.find_element(By.CSS_SELECTOR, "button").click()
        box = Team.open(team, root=root).inbox("alice")
        got: Any = wait_for(lambda: box.unread())
        assert [(m.from_, m.text, m.summary) for m in got] == [
            ("team-lead", "hello alice, from the browser", "from the page")
        ]
        shown(browser, '#messages li[data-from="team-lead"][data-to="alice"]')  # and on the page, live
        tasks = browser.find_element(By.ID, "task-form")
        tasks.find_element(By.NAME, "subject").send_keys("Made in the browser")
        tasks.find_element(By.CSS_SELECTOR, "button").click()
        shown(browser, '#board [data-status="pending"] li[data-task="1"]')
        assert Team.open(team, root=root).tasks.get("1").subject == "Made in the browser"


def test_without_the_token_the_page_is_a_login_hint_only(root: Path, team: str, browser: WebDriver) -> None:
    with serving(root) as server:
        browser.get(server.base + "/")
        assert "token" in shown(browser, "#login-hint").lower()
        text = browser.find_element(By.TAG_NAME, "body").text
        assert "alice" not in text and team not in text
        assert not browser.find_element(By.ID, "team").is_displayed()
        assert not browser.find_elements(By.CSS_SELECTOR, "#members tbody tr, #messages *")
        browser.get(server.base + "/?token=wrong")
        shown(browser, "#login-hint")
        # The token pasted into the hint's form opens the page.
        browser.find_element(By.NAME, "token").send_keys(server.token)
        browser.find_element(By.CSS_SELECTOR, "#login form button").click()
        shown(browser, '#members tr[data-member="alice"]')
        # Out of the address bar, kept for the tab: a reload goes on working; no cookie.
        assert "token=" not in browser.current_url and not browser.get_cookies()
        browser.refresh()
        shown(browser, '#members tr[data-member="alice"]')
