"""Issue 18: docs/api.md is generated from the OpenAPI document the host serves, and the
committed page is exactly what the generator makes now (regenerate with
``python -m agentloom.host.apidoc > docs/api.md``)."""

from __future__ import annotations

from pathlib import Path

from agentloom.host.apidoc import api_markdown
from agentloom.host.openapi import openapi_document

API_MD = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def test_i18_docs_api_md_is_the_openapi_document_rendered() -> None:
    assert API_MD.read_text(encoding="utf-8") == api_markdown(), (
        "docs/api.md is out of date: python -m agentloom.host.apidoc > docs/api.md")


def test_i18_every_route_and_schema_of_the_document_has_its_section() -> None:
    doc = openapi_document("")
    text = api_markdown(doc)
    for path, ops in doc["paths"].items():
        for method in ops:
            assert f"## `{method.upper()} {path}`" in text
    for name in doc["components"]["schemas"]:
        assert f"### `{name}`" in text and f'<a id="schema-{name.lower()}"></a>' in text
