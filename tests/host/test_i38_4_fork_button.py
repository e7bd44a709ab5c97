"""Issue 38 acceptance 4 (and the HTTP side of 3): the run page's "Fork from here" button in
a real browser (Playwright driving the Debian Chromium) against a real ``agentloom serve``,
and ``POST /v1/runs/{run_id}/fork``: another principal's fork is 404, an ``at`` that is no
operation of the run is 404 ``OPERATION_NOT_FOUND`` (a schema-valid body is never a 400: the
API contract test), a blank message is 400.

The page's button, on the origin's second ``fs.write``, asks for an optional message, creates
the fork and goes to its page, which says where it was forked from and where its files came
from; the fork runs to its end (the script model answers by the turn its history is at).
Outside CI the browser test skips with one line when no browser can be started; under
CI=true it fails instead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest

from .support import make_key, serving
from .test_i18_3_ui import _playwright, browser  # noqa: F401  (the fixture: Chromium, Debian's when installed)

TIMEOUT_MS = 60_000
CONFIG = """\
version: 1
agents:
  main:
    model: {builtin: script, path: turns.yaml}
    tools: [fs.write]
"""
TURNS = """\
turns:
  - tool_calls:
      - name: fs_write
        arguments: {path: one.txt, content: first}
  - tool_calls:
      - name: fs_write
        arguments: {path: two.txt, content: second}
  - text: done
"""


def _project(tmp_path: Path) -> Path:
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "turns.yaml").write_text(TURNS, encoding="utf-8")
    config = folder / "agentloom.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    return config




class Client:
    def __init__(self, base: str, key: str) -> None:
        self.base, self.headers = base, {"Authorization": f"Bearer {key}"}

    def get(self, path: str) -> httpx2.Response:
        return httpx2.get(self.base + path, headers=self.headers, timeout=30)

    def post(self, path: str, body: dict[str, Any]) -> httpx2.Response:
        return httpx2.post(self.base + path, headers=self.headers, json=body, timeout=90)


def _origin(alice: Client) -> tuple[str, list[dict[str, Any]]]:
    made = alice.post("/v1/runs", {"task": "write two files", "wait": True})
    assert made.status_code == 201, made.text
    run = made.json()
    assert run["status"] == "succeeded", run
    assert run["forked_from"] is None
    ops = alice.get(f"/v1/runs/{run['run_id']}/operations").json()["items"]
    return run["run_id"], ops


def test_i38_4_fork_over_http_is_the_owners_alone_and_names_a_bad_fork_point(
        tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    alice_key, bob_key = make_key(store, "alice", "acme"), make_key(store, "bob", "other")
    with serving(_project(tmp_path), store) as base:
        alice, bob = Client(base, alice_key), Client(base, bob_key)
        origin, ops = _origin(alice)
        second = [o for o in ops if o["capability"] == "fs.write"][1]["operation_id"]

        theirs = bob.post(f"/v1/runs/{origin}/fork", {"at": second})
        assert theirs.status_code == 404, theirs.text
        assert theirs.json()["code"] == "RUN_NOT_FOUND"
        missing = bob.post("/v1/runs/no-such-run/fork", {"at": second})
        assert missing.status_code == 404 and missing.json()["detail"] == theirs.json()["detail"] \
            .replace(origin, "no-such-run")

        bad = alice.post(f"/v1/runs/{origin}/fork", {"at": "no-such-operation"})
        assert bad.status_code == 404, bad.text
        assert bad.json()["code"] == "OPERATION_NOT_FOUND"
        assert "no-such-operation" in bad.json()["detail"]
        blank = alice.post(f"/v1/runs/{origin}/fork", {"at": second, "message": "  "})
        assert blank.status_code == 400 and "message" in blank.json()["detail"]

        made = alice.post(f"/v1/runs/{origin}/fork", {"at": second})
        assert made.status_code == 201, made.text
        fork = made.json()
        assert fork["forked_from"]["run_id"] == origin
        assert fork["forked_from"]["operation_id"] == second
        assert fork["actor"] == "alice" and fork["project"] == "acme"
        assert bob.get(f"/v1/runs/{fork['run_id']}").status_code == 404


@pytest.fixture
def keyed_store(tmp_path: Path) -> tuple[str, str]:
    """A SQLite store and a key of alice in acme, made before the browser's event loop runs."""
    store = f"sqlite:///{tmp_path / 'store.db'}"
    return store, make_key(store, "alice", "acme")


def test_i38_4_the_fork_from_here_button_makes_a_fork_and_shows_where_it_came_from(
        tmp_path: Path, keyed_store: tuple[str, str], browser: Any) -> None:  # noqa: F811
    expect = _playwright().expect
    expect.set_options(timeout=TIMEOUT_MS)
    store, key = keyed_store
    with serving(_project(tmp_path), store) as base:
        alice = Client(base, key)
        origin, ops = _origin(alice)
        second = [o for o in ops if o["capability"] == "fs.write"][1]["operation_id"]
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(base + "/ui")
        page.get_by_label("API key").fill(key)
        page.get_by_role("button", name="Open").click()
        page.goto(f"{base}/ui/#/runs/{origin}")
        expect(page.get_by_test_id("run-status")).to_have_text("succeeded")
        # every call of the run's own agent (3 model calls, 2 tool calls) is a fork point
        expect(page.get_by_role("button", name="Fork from here")).to_have_count(len(ops))

        page.once("dialog", lambda dialog: dialog.accept("write it again"))
        row = page.locator(f'tr[data-operation-id="{second}"]')
        row.get_by_role("button", name="Fork from here").click()

        forked = page.get_by_test_id("forked-from")
        expect(forked).to_contain_text(origin)
        expect(forked).to_contain_text(second)
        expect(page.get_by_test_id("run-status")).to_have_text("succeeded")
        expect(page.locator("dl.facts")).to_contain_text("restored from the record")
        fork_id = page.evaluate("location.hash").split("/")[2]
        assert fork_id != origin
        fork = alice.get(f"/v1/runs/{fork_id}").json()
        assert fork["task"] == "write it again" and fork["output"] == "done"
        assert fork["forked_from"]["operation_id"] == second
        calls = [o for o in alice.get(f"/v1/runs/{fork_id}/operations").json()["items"]
                 if o["kind"] == "tool"]
        # the fork asked the model again at turn 2: only the 2nd write ran, in the fork
        assert [c["executed_arguments"]["path"] for c in calls] == ["two.txt"]
        assert [c["status"] for c in calls] == ["succeeded"]
        # the origin link goes back to the origin
        forked.get_by_role("link").click()
        expect(page.get_by_test_id("run-status")).to_have_text("succeeded")
        assert page.evaluate("location.hash").split("/")[2] == origin
