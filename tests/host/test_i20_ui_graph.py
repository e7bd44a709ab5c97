"""Issue 20: the host's run inspector draws a workflow run's graph state — each node's status,
the current node, a wait for a person — and the wait is approved from the page, in a real
browser (Playwright driving Chromium) against a real `agentloom serve`. The run is created
over HTTP with ``{"task", "workflow"}``; an unknown workflow is a 400 naming the defined ones.
Outside CI the test skips with one line when no browser can be started."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2

from .support import Api, serving
from .test_i18_3_ui import TIMEOUT_MS, _playwright, browser, keyed_store, shots  # noqa: F401

CONFIG = """\
version: 1
agents:
  main:
    model: {builtin: script, path: turns.yaml}
workflows:
  ship:
    nodes:
      write:   {capability: fs.write, args: {path: notes.txt, content: "{{ input.task }}"}}
      approve: {wait: approval, question: "Ship {{ input.task }}?"}
      check:   {capability: fs.read, args: {path: notes.txt}}
    edges:
      - {from: write, to: approve}
      - {from: approve, to: check, when: approved}
sandbox: {backend: none}
"""


def _project(tmp_path: Path) -> Path:
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "turns.yaml").write_text("turns:\n  - text: done\n", encoding="utf-8")
    config = folder / "agentloom.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    return config


def test_i20_the_inspector_draws_the_graph_and_approves_the_wait_node(
        tmp_path: Path, keyed_store: tuple[str, str], browser: Any,  # noqa: F811
        shots: Path) -> None:  # noqa: F811
    expect = _playwright().expect
    expect.set_options(timeout=TIMEOUT_MS)
    store, key = keyed_store
    with serving(_project(tmp_path), store) as base:
        api = Api(base, key, httpx2.get(base + "/openapi.json").json())
        unknown = api.post("/v1/runs", body={"task": "x", "workflow": "shpi"})
        assert unknown.status_code == 400 and "workflows: ['ship']" in unknown.json()["detail"]
        run_id = api.post("/v1/runs", body={"task": "v2.0", "workflow": "ship"}).json()["run_id"]
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(base + "/ui")
        page.get_by_label("API key").fill(key)
        page.get_by_role("button", name="Open").click()
        page.goto(f"{base}/ui/#/runs/{run_id}")

        expect(page.get_by_test_id("run-status")).to_have_text("waiting")
        graph = page.get_by_test_id("graph")
        expect(graph).to_contain_text("Workflow ship")
        expect(graph).to_contain_text("current: approve")
        expect(graph.locator('tr[data-node="write"] .badge')).to_have_text("succeeded")
        expect(graph.locator('tr[data-node="approve"] .badge')).to_have_text("waiting")
        expect(graph.locator('tr[data-node="check"] .badge')).to_have_text("pending")
        expect(graph).to_contain_text("approve → check when approved")
        page.screenshot(path=shots / "workflow-waiting.png", full_page=True)
        approval = page.get_by_test_id("approval")
        expect(approval).to_contain_text("Ship v2.0?")
        approval.get_by_role("button", name="Approve").click()

        expect(page.get_by_test_id("run-status")).to_have_text("succeeded")
        for node in ("write", "approve", "check"):
            expect(graph.locator(f'tr[data-node="{node}"] .badge')).to_have_text("succeeded")
        expect(graph.locator('tr[data-node="check"]')).to_contain_text("v2.0")
        page.screenshot(path=shots / "workflow-done.png", full_page=True)
        shown = api.get("/v1/runs/{run_id}", run_id=run_id).json()
        assert [n["status"] for n in shown["nodes"]] == ["succeeded"] * 3
        assert shown["workflow"] == "ship" and shown["current"] == []
