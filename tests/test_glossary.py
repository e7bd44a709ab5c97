"""Issue #35 item 7 (a true map): the glossary defines each term users meet across the product
— one row per term, with a page that explains it — and every page a row links to exists."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
TERMS = ("assembly", "RuntimeOptions", "repository (store)", "hook handler kind", "extra",
         "run", "operation", "hook", "lease", "workspace", "session", "skill", "MCP server",
         "A2A agent / task", "workflow / node", "intent", "command / receipt",
         "principal / project / API key", "worker", "holder id", "store's clock", "approval",
         "pending / waiting / suspended")


def rows() -> dict[str, str]:
    text = (DOCS / "glossary.md").read_text(encoding="utf-8")
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| \*\*(.+?)\*\*[^|]*\|[^|]*\|(.*)\|$",
                                                          text, re.M)}


def test_i35_7_the_glossary_defines_every_term_of_the_product() -> None:
    defined = rows()
    assert [t for t in TERMS if t not in defined] == []


def test_i35_7_every_page_the_glossary_links_exists() -> None:
    links = {link.split("#")[0] for where in rows().values()
             for link in re.findall(r"\]\(([^)]+)\)", where)}
    assert links and sorted(link for link in links if not (DOCS / link).exists()) == []
