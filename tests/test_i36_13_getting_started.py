"""docs/getting-started.md runs as written (issue #36, 13; acceptance 4).

The page is run top to bottom by ``tests/doc_pages.py`` (which says what its comments mean) in
one fresh ``0700`` folder (as ``mktemp -d`` makes it), with this checkout's virtualenv first on
``PATH``; the page's own install line is the one block not run (it would install from PyPI).
The one change made to the text: the port ``8700`` (``agentloom serve``'s default) becomes a
free port.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest
from tests.doc_pages import blocks, run_page, unrun_blocks

from agentloom.sandbox.reach import can_make_mount_namespace

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "getting-started.md"
PORT = "8700"


def test_i36_13_every_snippet_of_the_page_is_run_or_says_why_not() -> None:
    found = blocks(PAGE.read_text(encoding="utf-8"))
    assert len(found) > 10
    assert unrun_blocks("docs/getting-started.md", found) == []


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


@pytest.mark.skipif(os.geteuid() == 0 and not can_make_mount_namespace(), reason=(
    "without a mount namespace the sandbox's uid 65534 cannot reach a 0700 folder: the page "
    "runs where root may make one (tests/shapes/test_i33_integrations.py tests the refusal)"))
def test_i36_13_getting_started_runs_from_top_to_bottom() -> None:
    page = PAGE.read_text(encoding="utf-8").replace(PORT, _free_port())
    base = Path(tempfile.mkdtemp(prefix="first-day-"))  # 0700, as mktemp -d makes it
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLOOM_")}
    env["HOME"] = str(base)
    try:
        assert run_page("docs/getting-started.md", page, base, env) >= 10
    finally:
        shutil.rmtree(base, ignore_errors=True)
