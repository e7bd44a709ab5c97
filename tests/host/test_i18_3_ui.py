"""Issue 18 acceptance 3: the web run inspector at /ui in a real browser (Playwright driving
Chromium) against a real `agentloom serve`. A key is asked for once (a refused one says so);
the run list shows a new run reach `succeeded` by itself, its hostile task as text; the
timeline marks the call a hook rewrote, and its operation page shows the proposed and the
executed arguments side by side; a call a hook asked about is approved from the page and the
run finishes live over the event stream. Screenshots of the list and timelines are saved under
the test's tmp folder and copied to $AGENTLOOM_ARTIFACTS when it is set. Outside CI the test
skips with one line when no browser can be started; under CI=true it fails instead."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from agentloom.host.ui import STATIC

from .support import Api, make_key, serving

TIMEOUT_MS = 60_000
PROPOSED = '<b id="pwned-args">hi</b> there'
REWRITTEN = "rewritten by the hook"
HOSTILE_TASK = '<img src=x onerror="document.title=\'pwned\'"><b id="pwned-task">bold</b>'
CONFIG = """\
version: 1
agents:
  main:
    model: {builtin: script, path: turns.yaml}
    tools: [fs.write]
    hooks:
      - {timing: before, event: tool, match: {capability: fs.write}, handler: {ref: "guards:rewrite"}}
  careful:
    model: {builtin: script, path: turns.yaml}
    tools: [fs.write]
    hooks:
      - {timing: before, event: tool, match: {capability: fs.write}, handler: {ref: "guards:ask"}}
"""
TURNS = f"""\
turns:
  - tool_calls:
      - name: fs_write
        arguments: {{path: hello.txt, content: '{PROPOSED}'}}
  - text: done
"""
GUARDS = f'''\
def rewrite(event):
    return {{"decision": "allow", "payload_patch": [
        {{"op": "replace", "path": "/payload/content", "value": "{REWRITTEN}"}}]}}


def ask(event):
    return {{"decision": "ask", "reason": "Write it?"}}
'''


def _project(tmp_path: Path) -> Path:
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "turns.yaml").write_text(TURNS, encoding="utf-8")
    (folder / "guards.py").write_text(GUARDS, encoding="utf-8")
    config = folder / "agentloom.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    return config


def test_i18_3_the_inspector_assets_ship_in_the_package_load_nothing_remote_parse_no_html() -> None:
    assets = {p.name: p.read_text(encoding="utf-8") for p in STATIC.iterdir()}
    scripts = [name for name in assets if name.endswith(".js")]
    assert {"index.html", "inspector.css", "app.js"} <= set(assets) and len(scripts) >= 2
    referenced = set(re.findall(r'(?:src|href)="([^"#]+)"', assets["index.html"]))
    for name in scripts:
        referenced |= set(re.findall(r'from "\./([^"]+)"', assets[name]))
    assert referenced - set(assets) == set(), referenced
    for name, text in assets.items():
        assert not re.search(r"https?://|//cdn|@import", text), name
        if name in scripts:
            for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write",
                         "eval(", "new Function", "new EventSource"):
                assert sink not in text, (name, sink)


@pytest.fixture
def keyed_store(tmp_path: Path) -> tuple[str, str]:
    """A SQLite store and a key of alice in acme, made before the browser's event loop runs."""
    store = f"sqlite:///{tmp_path / 'store.db'}"
    return store, make_key(store, "alice", "acme")


def _playwright() -> Any:
    """``playwright.sync_api``; outside CI a skip when it is not installed."""
    if os.environ.get("CI") == "true":
        return importlib.import_module("playwright.sync_api")
    return pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install -e '.[dev]')")


@pytest.fixture
def browser() -> Iterator[Any]:
    """Chromium: the Debian package's when installed, else Playwright's own."""
    playwright_api = _playwright()
    with playwright_api.sync_playwright() as pw:
        tried = []
        found = shutil.which("chromium")
        for options in ([{"executable_path": found}] if found else []) + [{}]:
            try:
                launched = pw.chromium.launch(**options)
                break
            except playwright_api.Error as exc:
                tried.append(str(exc).strip().splitlines()[0])
        else:
            reason = f"no browser could be started for the inspector test: {'; '.join(tried)}"
            if os.environ.get("CI") == "true":
                pytest.fail(reason)
            pytest.skip(reason)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def shots(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "screenshots"
    folder.mkdir()
    try:
        yield folder
    finally:
        target = os.environ.get("AGENTLOOM_ARTIFACTS")
        if target:
            shutil.copytree(folder, Path(target) / "i18_3_ui", dirs_exist_ok=True)


def test_i18_3_the_inspector_follows_runs_live_shows_a_rewrite_and_approves_a_call(
        tmp_path: Path, keyed_store: tuple[str, str], browser: Any, shots: Path) -> None:
    expect = _playwright().expect
    expect.set_options(timeout=TIMEOUT_MS)
    store, key = keyed_store
    with serving(_project(tmp_path), store) as base:
        api = Api(base, key, httpx2.get(base + "/openapi.json").json())
        served = httpx2.get(base + "/ui/")
        assert served.status_code == 200
        assert "script-src 'self'" in served.headers["content-security-policy"]
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(base + "/ui")

        page.get_by_label("API key").fill("alk_not_a_key")
        page.get_by_role("button", name="Open").click()
        expect(page.get_by_role("alert")).to_contain_text("refused")
        page.get_by_label("API key").fill(key)
        page.get_by_role("button", name="Open").click()
        expect(page.get_by_test_id("runs")).to_contain_text("No runs")

        rewritten = api.post("/v1/runs", body={"task": HOSTILE_TASK}).json()["run_id"]
        row = page.locator(f'tr[data-run-id="{rewritten}"]')
        expect(row.locator(".badge")).to_have_text("succeeded")  # the list refreshes itself
        expect(row).to_contain_text(HOSTILE_TASK)
        assert page.locator("#pwned-task").count() == 0 and page.title() != "pwned"
        page.screenshot(path=shots / "runs.png", full_page=True)

        row.get_by_role("link").click()
        expect(page.get_by_test_id("run-status")).to_have_text("succeeded")
        expect(page.get_by_test_id("events")).to_contain_text("run.finished")
        write = page.get_by_test_id("timeline").locator("tr", has_text="fs.write")
        expect(write).to_contain_text("arguments rewritten")
        expect(write).to_contain_text("allow")
        page.screenshot(path=shots / "timeline.png", full_page=True)

        write.get_by_role("link", name="fs.write").click()
        expect(page.get_by_test_id("arguments-left").locator(".del")).to_contain_text(json.dumps(PROPOSED))
        expect(page.get_by_test_id("arguments-right").locator(".add")).to_contain_text(json.dumps(REWRITTEN))
        expect(page.get_by_test_id("arguments-right")).not_to_contain_text(json.dumps(PROPOSED))
        assert page.locator("#pwned-args").count() == 0
        page.screenshot(path=shots / "operation.png", full_page=True)

        waiting = api.post("/v1/runs", body={"task": "write carefully", "agent": "careful"})
        run_id = waiting.json()["run_id"]
        page.goto(f"{base}/ui/#/runs/{run_id}")
        expect(page.get_by_test_id("run-status")).to_have_text("waiting")
        approval = page.get_by_test_id("approval")
        expect(approval).to_contain_text("Write it?")
        page.screenshot(path=shots / "timeline-waiting.png", full_page=True)
        approval.get_by_role("button", name="Approve").click()
        expect(page.get_by_test_id("run-status")).to_have_text("succeeded")
        expect(page.get_by_test_id("events")).to_contain_text("run.finished")
        expect(page.get_by_test_id("approval")).to_have_count(0)
        page.screenshot(path=shots / "timeline-approved.png", full_page=True)

        ops = api.get("/v1/runs/{run_id}/operations", run_id=run_id).json()["items"]
        (call,) = [o for o in ops if o["capability"] == "fs.write"]
        assert call["outcome"] == "succeeded" and call["attempts"]["count"] == 1
        assert call["executed_arguments"]["content"] == PROPOSED
    assert sorted(p.name for p in shots.iterdir()) == [
        "operation.png", "runs.png", "timeline-approved.png", "timeline-waiting.png",
        "timeline.png"]
