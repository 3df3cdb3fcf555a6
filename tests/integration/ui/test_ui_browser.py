"""The inspector in a real browser: headless Chromium (Debian's chromium + chromium-driver, installed by
``make browser``) driven through selenium: load, search, open a memory, run a query, forget with
confirmation, see the error of a bad filter, at 1280x800 and at a phone's width.

With REDMEM_UI_SCREENSHOTS=1 each page's screenshot is written to docs/img/ (shown on docs/ui.md).
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from conftest import configured_embeddings
from redmem._demo import sample_conversation
from redmem.cli_commands._ingest import store_turns
from redmem.cli_commands._memory import ChatMemory
from redmem.embeddings import HashingEmbeddings
from redmem.ui import build_app
from redmem.ui._command import allowed_hosts, page_url

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed: pip install -e '.[dev]'")
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions as seen  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

IMAGES = Path(__file__).resolve().parents[3] / "docs" / "img"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="no chromium/chromedriver on PATH and `make browser` could not install them "
           "(it needs apt-get as root: apt-get install -y chromium chromium-driver)",
)


class Served:
    """The inspector app served by uvicorn on a free loopback port, in a thread of this process."""

    def __init__(self, agent: str) -> None:
        import uvicorn

        self.listener = socket.create_server(("127.0.0.1", 0))
        port = self.listener.getsockname()[1]
        self.url = page_url("127.0.0.1", port, "browser-token", agent)
        self.base = f"http://127.0.0.1:{port}"
        app = build_app("browser-token", allowed_hosts("127.0.0.1", port), agent)
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.listener]}, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture
def served(db):
    with configured_embeddings(HashingEmbeddings(384)):
        store_turns(sample_conversation(datetime(2026, 11, 27, tzinfo=UTC)).turns, "ana")
        store_turns(sample_conversation(datetime(2026, 11, 20, tzinfo=UTC)).turns[:12], "bo")
        served = Served("ana")
        yield served
        served.stop()


@pytest.fixture
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,800", "--force-device-scale-factor=1"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    driver.set_window_size(1280, 800)
    yield driver
    driver.quit()


def wait(driver, css: str, timeout: float = 10):
    return until(driver, seen.visibility_of_element_located((By.CSS_SELECTOR, css)), timeout)


def until(driver, condition, timeout: float = 10):
    """Wait for ``condition``; an element re-rendered meanwhile is looked up again."""
    return WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(condition)


def heading_of(driver) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, "main h2").text)


def shot(driver, name: str) -> None:
    if os.environ.get("REDMEM_UI_SCREENSHOTS"):
        IMAGES.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(IMAGES / f"ui-{name}.png"))


def test_the_inspector_in_a_browser(served, browser):
    browser.get(served.url.split("#")[0])
    tenants = wait(browser, "#tenants")
    assert "ana" in tenants.text and "bo" in tenants.text
    shot(browser, "tenants")

    browser.find_element(By.LINK_TEXT, "ana").click()
    total = ChatMemory.query.filter(agent_id="ana").count()
    until(browser, lambda d: f"{total} memories, ordered by decay" in d.find_element(By.ID, "summary").text)

    search = browser.find_element(By.ID, "search")
    search.send_keys("Lisbon tile museum", Keys.ENTER)  # the keyboard submits the form
    until(browser, lambda d: "ordered by relevance" in d.find_element(By.ID, "summary").text)
    rows = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "#memories tbody tr")]
    assert any("tile museum" in row for row in rows[:3])
    shot(browser, "memories")

    browser.find_element(By.ID, "search").clear()
    browser.find_element(By.ID, "filter").send_keys("speaker=Ana", Keys.ENTER)
    error = wait(browser, "#error")
    assert error.text.startswith("QueryException:") and "indexed fields" in error.text
    shot(browser, "filter-error")

    browser.find_element(By.ID, "filter").clear()
    browser.find_element(By.ID, "apply").click()
    until(browser, lambda d: "ordered by decay" in d.find_element(By.ID, "summary").text)
    assert not browser.find_element(By.ID, "error").is_displayed()
    link = browser.find_elements(By.CSS_SELECTOR, "a.memory-link")[0]
    opened = link.text
    link.click()
    # the list's heading may still be there (and then replaced) when the click returns
    title = until(browser, lambda d: heading_of(d).startswith("Memory ") and heading_of(d))
    assert opened in until(browser, lambda d: d.find_element(By.CSS_SELECTOR, "dl.fields").text)
    memory_id = title.split()[-1]
    chart = browser.find_element(By.CSS_SELECTOR, "svg#timeline")
    assert chart.is_displayed() and "decay score from the last touch" in chart.get_attribute("aria-label")
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg#timeline polyline")) == 2
    assert "null" not in browser.find_element(By.CSS_SELECTOR, "main").text.split()
    shot(browser, "memory")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", chart)
    shot(browser, "memory-timeline")
    browser.execute_script("window.scrollTo(0, 0)")

    browser.find_element(By.ID, "forget").click()
    wait(browser, "#confirm")
    assert "Forget this memory" in browser.find_element(By.ID, "confirm-text").text
    browser.find_element(By.ID, "confirm-cancel").click()
    assert ChatMemory.query.get(agent_id="ana", memory_id=memory_id) is not None  # cancelled: nothing done
    browser.find_element(By.ID, "forget").click()
    wait(browser, "#confirm")
    shot(browser, "forget-confirm")
    browser.find_element(By.ID, "confirm-ok").click()
    until(browser, lambda d: "forgot" in d.find_element(By.ID, "notice").text)
    assert ChatMemory.query.get(agent_id="ana", memory_id=memory_id) is None
    assert ChatMemory.query.filter(agent_id="ana").count() == total - 1
    until(browser, lambda d: f"{total - 1} memories" in d.find_element(By.ID, "summary").text)

    browser.get(served.url.split("#")[0] + "#/agent/ana/ask")
    question = wait(browser, "#question")
    question.send_keys("Who is coming to Lisbon?")
    browser.find_element(By.ID, "run").click()
    until(browser, lambda d: d.find_elements(By.ID, "context") or d.find_element(By.ID, "error").is_displayed(), 30)
    assert not browser.find_element(By.ID, "error").is_displayed(), browser.find_element(By.ID, "error").text
    items = browser.find_elements(By.CSS_SELECTOR, ".item")
    assert items and "rank" in items[0].text and "→ adds" in items[0].text
    assert "tokens" in browser.find_element(By.ID, "budget-label").text
    assert browser.find_element(By.CSS_SELECTOR, "[aria-label='left out']").text.startswith("Left out")
    shot(browser, "ask")

    browser.set_window_size(390, 844)
    browser.get(served.url.split("#")[0] + "#/agent/ana")
    wait(browser, "#memories")
    width = browser.execute_script("return document.documentElement.scrollWidth")
    assert width <= 390, "the memories page scrolls sideways at a phone's width"
    shot(browser, "phone")


def test_the_page_refuses_a_missing_token(served, browser):
    browser.get(served.base + "/")
    assert "a valid token is required" in browser.find_element(By.TAG_NAME, "body").text
