"""What the browser tests stand on: the app served the README way, Debian's Chromium, a fresh
page per test, and the page operations they share (typing into the form, waiting for gradio's
queue, reading the charts). The fixtures themselves are in test_ui_browser.py."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "artifacts"
DOCS_SCREENSHOT = REPO / "docs" / "screenshot.png"
CHROMIUM = Path("/usr/bin/chromium")
NO_CHROMIUM = "Debian chromium not installed (apt-get install chromium)"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1400, "height": 1000}
PAGE_TIMEOUT_S = 60  # first HTTP 200 on "/"
READY_TIMEOUT_MS = 120_000  # the tiny model loads in seconds; a busy 2-core box is slower
RUN_TIMEOUT_MS = 60_000
NO_RESULTS = "Results appear here after Run."

# Follows gradio's queue from the page: a POST to queue/join opens an event (its inputs are in
# the body), its `process_completed` message on the queue/data stream closes it. Tests wait
# for a quiet spell, or for the event that carried a typed value, instead of sleeping.
QUEUE_TRACKER = """
(() => {
  const sent = [];
  const byId = new Map();
  const completed = new Set();
  let last = Date.now();
  const touch = () => { last = Date.now(); };
  const watch = (message) => {
    if (message && message.event_id && message.msg === "process_completed") {
      completed.add(message.event_id);
      const event = byId.get(message.event_id);
      if (event) event.done = true;
      touch();
    }
  };
  const read = async (body) => {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      const lines = buffer.split("\\n");
      buffer = lines.pop();
      for (const line of lines) {
        if (line.startsWith("data:")) {
          try { watch(JSON.parse(line.slice(5))); } catch (e) {}
        }
      }
    }
  };
  const originalFetch = window.fetch;
  window.fetch = async function (input, init) {
    const url = typeof input === "string" ? input : (input && input.url) || String(input);
    const method = ((init && init.method) || "GET").toUpperCase();
    if (url.includes("/queue/data") && method === "GET") {
      const response = await originalFetch.call(this, input, init);
      if (!response.body) return response;
      const [mine, theirs] = response.body.tee();
      read(mine).catch(() => {});
      return new Response(theirs, {
        status: response.status, statusText: response.statusText, headers: response.headers,
      });
    }
    if (!url.includes("/queue/join")) return originalFetch.call(this, input, init);
    const event = { data: [], done: false };
    try { event.data = JSON.parse(init.body).data || []; } catch (e) {}
    sent.push(event);
    touch();
    try {
      const response = await originalFetch.call(this, input, init);
      const body = await response.clone().json().catch(() => ({}));
      if (body.event_id) {
        byId.set(body.event_id, event);
        if (completed.has(body.event_id)) event.done = true;
      } else {
        event.done = true;  // refused: nothing will run
      }
      return response;
    } catch (error) {
      event.done = true;
      throw error;
    } finally {
      touch();
    }
  };
  window.__queue = {
    quietFor: () => (sent.some(e => !e.done) ? 0 : Date.now() - last),
    took: (value) => sent.some(e => e.done && e.data[0] === value),
    count: () => sent.length,
  };
})();
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _log_tail(log: Path, lines: int = 40) -> str:
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


@contextlib.contextmanager
def served_app(model: Path, log: Path) -> Iterator[str]:
    """`python app.py --model ... --device cpu --port N` from the repository root, as the
    README starts it; yields the page's URL once "/" answers 200, stops the app afterwards."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "app.py", "--model", str(model), "--device", "cpu"]
    command += ["--port", str(port)]
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1"}
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + PAGE_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"app.py exited with {process.returncode}:\n{_log_tail(log)}")
            try:
                with urllib.request.urlopen(url + "/", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"no HTTP 200 on {url}/ after {PAGE_TIMEOUT_S} s:\n{_log_tail(log)}")
            time.sleep(0.25)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


@contextlib.contextmanager
def chromium() -> Iterator[Browser]:
    """Debian's Chromium, headless, through Playwright (which never downloads a browser here);
    skips the test where it is not installed."""
    if not CHROMIUM.exists():
        pytest.skip(NO_CHROMIUM)
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


def artifact_name(test_name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", test_name).strip("-")


@contextlib.contextmanager
def app_page(browser: Browser, url: str, screenshot: str) -> Iterator[Page]:
    """A fresh session (its own gradio state) with the model loaded; a full-page screenshot
    lands in artifacts/<screenshot>.png at the end, whether the test passed or not."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport=VIEWPORT)
    context.add_init_script(QUEUE_TRACKER)
    try:
        page = context.new_page()
        page.goto(url + "/")
        expect(page.locator("#run")).to_be_enabled(timeout=READY_TIMEOUT_MS)
        expect(page.locator("#model-status")).to_contain_text("Ready")
        yield page
    finally:
        with contextlib.suppress(Exception):  # never hide the test's own error
            ARTIFACTS.mkdir(exist_ok=True)
            path = ARTIFACTS / f"{artifact_name(screenshot)}.png"
            context.pages[0].screenshot(path=path, full_page=True)
        context.close()


# --- waiting ---------------------------------------------------------------------------


def settle(page: Page, quiet_ms: int = 400, timeout_ms: int = 30_000) -> None:
    """Wait until no gradio event has been queued or running for `quiet_ms`: follow-up events
    (a State's .change after an edit) start within a few milliseconds of their cause."""
    page.wait_for_function(
        "quiet => window.__queue.quietFor() >= quiet", arg=quiet_ms, timeout=timeout_ms
    )


def wait_taken(page: Page, value: str, timeout_ms: int = 30_000) -> None:
    """Wait until an event that carried `value` as its first input (a typed box's .change)
    has run on the server, then for the events that follow from it."""
    page.wait_for_function("v => window.__queue.took(v)", arg=value, timeout=timeout_ms)
    settle(page)


# --- the question form ---------------------------------------------------------------------


def question_cards(page: Page) -> Locator:
    # gradio nests a keyed Group's elem_classes twice: the inner one holds the `.styler` div.
    return page.locator(".question-card:has(> .styler)")


def add_question(page: Page, kind: str) -> None:
    """Pick `kind` in "Type of the new question", press "Add question", wait for its card."""
    from playwright.sync_api import expect

    before = question_cards(page).count()
    page.locator("#new-type input").click()
    page.get_by_role("option", name=kind, exact=True).click()
    expect(page.locator("#new-type input")).to_have_value(kind)
    page.locator("#add-question").click()
    expect(question_cards(page)).to_have_count(before + 1)
    expect(question_cards(page).nth(before)).to_contain_text(f"Question {before + 1} · {kind}")
    settle(page)


def set_text(box: Locator, text: str) -> None:
    """Replace a textbox's text the way a person does (select all, type), and wait until the
    app took it: gradio saves it on the box's .change event, through the queue."""
    from playwright.sync_api import expect

    box.click()
    box.press("ControlOrMeta+a")
    box.press_sequentially(text)
    expect(box).to_have_value(text)
    wait_taken(box.page, text)


def card_values(page: Page) -> list[list[str]]:
    """Every text field of every question card, in order: what the form shows."""
    cards = question_cards(page)
    return [
        cards.nth(i).locator("textarea, input").evaluate_all("els => els.map(e => e.value)")
        for i in range(cards.count())
    ]


# --- state editor and media --------------------------------------------------------------


def state_text(page: Page) -> str:
    """The State editor's text (CodeMirror lines; an empty line renders as a <br>)."""
    return page.locator("#state .cm-line").evaluate_all(
        "lines => lines.map(l => l.textContent).join('\\n')"
    )


def paste_state(page: Page, text: str) -> str:
    """Put text into the State editor in one edit, as a paste does, and wait until the app
    took it; returns what the editor then holds. (Key by key, see
    test_typing_in_the_state_editor_settles.)"""
    page.locator("#state .cm-content").click()
    page.keyboard.insert_text(text)
    held = state_text(page)
    wait_taken(page, held)
    return held


def media_block(page: Page, label: str) -> Locator:
    return page.locator(f".block:has(> [data-testid=block-label]:text-is('{label}'))")


def upload_image(page: Page, path: Path) -> None:
    from playwright.sync_api import expect

    page.locator("input[type=file][accept='image/*']").set_input_files(path)
    expect(media_block(page, "Image").locator("img")).to_be_visible()
    settle(page)


# --- results -------------------------------------------------------------------------------


def answers(page: Page) -> Locator:
    return page.locator(".answer:has(> .styler)")


@dataclass(frozen=True)
class Share:
    label: str
    percent: float
    bold: bool


def shares(answer: Locator) -> list[Share]:
    """The "label: 12.3%" line under a chart, in order, the winner's (bold) marked; labels
    may hold " · " themselves (score levels: "0 · none: 12.3%")."""
    paragraph = answer.locator(".answer-text p").first
    line = paragraph.inner_text().splitlines()[0]
    bold = {text.strip() for text in paragraph.locator("strong").all_inner_texts()}
    found = re.findall(r"(.+?): (\d+\.\d)%(?: · |$)", line)
    return [
        Share(label, float(percent), f"{label}: {percent}%" in bold) for label, percent in found
    ]


def axis_labels(answer: Locator) -> list[str]:
    """The x-axis labels Vega drew in the chart's SVG, left to right."""
    axis = answer.locator("svg g.role-axis[aria-label^='X-axis'] g.role-axis-label text")
    return axis.all_text_contents()
