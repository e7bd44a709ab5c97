"""docs/testing.md runs as written (issue #36, 6: "a docs page 'testing your agent'").

The page is run top to bottom by ``tests/doc_pages.py`` (which says what its comments mean)
in one fresh folder, with this checkout's virtualenv first on ``PATH`` and no provider key in
the environment.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.doc_pages import blocks, run_page, unrun_blocks

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "testing.md"


def test_i36_6_every_block_of_the_page_is_saved_run_or_marked() -> None:
    found = blocks(PAGE.read_text(encoding="utf-8"))
    assert len(found) >= 6
    assert unrun_blocks("docs/testing.md", found) == []


def test_i36_6_the_testing_page_runs_as_written(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_API_TOKEN"))}
    env.pop("AGENTLOOM_STORE", None)
    assert run_page("docs/testing.md", PAGE.read_text(encoding="utf-8"), tmp_path, env) >= 4
