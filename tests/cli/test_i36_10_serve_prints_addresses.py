"""Issue #36, point 10: ``agentloom serve`` prints, at start, the page's URL, the API's base URL
and — while the store has no API key — the ``agentloom keys create`` line for this very store.

A real ``agentloom serve`` subprocess on ``--port 0`` (so only the printed lines say where it
listens); the test reads its output lines, fetches the printed URLs, runs the printed
``keys create`` line as it is and calls the API with the key it printed.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx2
import pytest

from agentloom.cli.serve import keys_command
from agentloom.config import load_config

from .support import SUBPROCESS_TIMEOUT_S

WAIT_S = 90.0
CONFIG = "version: 1\nagents:\n  main:\n    model: {builtin: test}\n"


class Served:
    """A running ``agentloom serve`` and every line it printed so far (stdout and stderr)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def line(self, starts: str) -> str:
        """The first line that starts with ``starts``, waiting for it."""
        deadline = time.monotonic() + WAIT_S
        while True:
            found = [x for x in list(self.lines) if x.startswith(starts)]
            if found:
                return found[0]
            assert self.proc.poll() is None, self.lines
            assert time.monotonic() < deadline, (starts, self.lines)
            time.sleep(0.05)


@contextlib.contextmanager
def serving(folder: Path) -> Iterator[Served]:
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    proc = subprocess.Popen([sys.executable, "-m", "agentloom", "serve", "agentloom.yaml",
                             "--port", "0"], cwd=folder, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        yield Served(proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _until_answered(get: Callable[[], httpx2.Response]) -> httpx2.Response:
    """The printed lines come once the port is bound, a moment before it answers."""
    deadline = time.monotonic() + WAIT_S
    while True:
        with contextlib.suppress(httpx2.TransportError):
            return get()
        assert time.monotonic() < deadline, "the printed address never answered"
        time.sleep(0.1)


def test_i36_10_serve_prints_the_page_the_api_and_the_key_line_that_works(
        tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "agentloom.yaml").write_text(CONFIG, encoding="utf-8")
    with serving(folder) as served:
        page = served.line("the page:").split()[-1]
        api = served.line("the API:").split()[2]
        assert page.startswith("http://127.0.0.1:") and page.endswith("/ui/"), page
        base = page.removesuffix("/ui/")
        assert not base.endswith(":0") and api == base + "/v1", (page, api)
        assert f"(OpenAPI: {base}/openapi.json)" in served.line("the API:")
        served.line("no API key in this store yet; make one (it is printed once) with:")
        command = served.line("  agentloom keys create ").strip()
        assert command.endswith(" --project default --config agentloom.yaml"), command

        shown = _until_answered(lambda: httpx2.get(page, timeout=10))
        assert shown.status_code == 200 and "text/html" in shown.headers["content-type"]
        assert httpx2.get(base + "/openapi.json", timeout=10).status_code == 200
        assert httpx2.get(api + "/runs", timeout=10).status_code == 401  # a key is needed

        made = subprocess.run([sys.executable, "-m", "agentloom", *shlex.split(command)[1:]],
                              cwd=folder, capture_output=True, text=True,
                              timeout=SUBPROCESS_TIMEOUT_S,
                              env={k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"})
        assert made.returncode == 0, made.stderr
        key = made.stdout.strip()
        listed = httpx2.get(api + "/runs", headers={"Authorization": f"Bearer {key}"}, timeout=10)
        assert listed.status_code == 200, listed.text

    with serving(folder) as again:  # the store has a key now: no key line
        again.line("the API:")
        _until_answered(lambda: httpx2.get(again.line("the page:").split()[-1], timeout=10))
        assert not [x for x in again.lines if "keys create" in x or "no API key" in x], \
            again.lines


@pytest.mark.parametrize(("store", "config_text", "ends"), [
    ("sqlite:////srv/a b/agentloom.db", CONFIG, "--project default --store "
     "'sqlite:////srv/a b/agentloom.db'"),
    (None, CONFIG + "projects:\n  web: {}\n", "--project web --config agentloom.yaml"),
])
def test_i36_10_the_key_line_names_the_store_serve_uses(
        tmp_path: Path, store: str | None, config_text: str, ends: str) -> None:
    (tmp_path / "agentloom.yaml").write_text(config_text, encoding="utf-8")
    line = keys_command(load_config(tmp_path / "agentloom.yaml"), Path("agentloom.yaml"), store)
    assert line.startswith("agentloom keys create --actor ") and line.endswith(ends), line
