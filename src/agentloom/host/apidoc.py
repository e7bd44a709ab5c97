"""docs/api.md, generated from the host's OpenAPI document (issue 18): one section per route with
its parameters, request body, responses and their schemas — so the reference never drifts from
``/openapi.json``. ``python -m agentloom.host.apidoc > docs/api.md`` writes it; a test checks the
committed page is what this module makes.

Owns: the Markdown rendering. Does not own the document (``host.openapi``, generated from the
shapes in ``host.shapes``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from agentloom.host.openapi import openapi_document

__all__ = ["api_markdown"]

HEADER = """# HTTP API reference

Generated from the OpenAPI 3.1 document the host serves at `/openapi.json`
(`python -m agentloom.host.apidoc > docs/api.md`; a test keeps this page in step). Every `/v1`
route needs `Authorization: Bearer KEY` ([host](host.md#identity)); errors are RFC 9457 problem
details (`application/problem+json`, schema `Problem` below).
"""


def _ref_name(schema: Mapping[str, Any]) -> str | None:
    ref = schema.get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def _type(schema: Mapping[str, Any] | None) -> str:
    if not schema:
        return "—"
    name = _ref_name(schema)
    if name:
        return f"[`{name}`](#schema-{name.lower()})"
    if "anyOf" in schema:
        return " or ".join(_type(option) for option in schema["anyOf"])
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(f"`{k}`" for k in kind)
    if kind == "array":
        items = schema.get("items")
        return f"array of {_type(items) if items else 'any'}"
    return f"`{kind}`" if kind else "any"


def _route(method: str, path: str, op: Mapping[str, Any]) -> list[str]:
    out = [f"## `{method.upper()} {path}`", "", str(op.get("summary", "")).strip(), ""]
    params = op.get("parameters") or []
    if params:
        out += ["| parameter | in | type | required |", "|---|---|---|---|"]
        for p in params:
            out.append(f"| `{p['name']}` | {p['in']} | {_type(p.get('schema'))} | "
                       f"{'yes' if p.get('required') else 'no'} |")
        out.append("")
    body = op.get("requestBody")
    if body:
        for media, content in body.get("content", {}).items():
            out += [f"Request body ({media}): {_type(content.get('schema'))}"
                    f"{'' if body.get('required') else ' (optional)'}", ""]
    out += ["| status | meaning | body |", "|---|---|---|"]
    for status, response in op.get("responses", {}).items():
        content = response.get("content") or {}
        bodies = "; ".join(f"{media}: {_type(c.get('schema'))}" for media, c in content.items())
        out.append(f"| {status} | {response.get('description', '')} | {bodies or '—'} |")
    out.append("")
    return out


def _schema(name: str, schema: Mapping[str, Any]) -> list[str]:
    out = [f'<a id="schema-{name.lower()}"></a>', f"### `{name}`", ""]
    if schema.get("description"):
        out += [str(schema["description"]), ""]
    props = schema.get("properties") or {}
    if props:
        required = set(schema.get("required") or ())
        out += ["| field | type | required |", "|---|---|---|"]
        for field, sub in props.items():
            out.append(f"| `{field}` | {_type(sub)} | {'yes' if field in required else 'no'} |")
        out.append("")
    else:
        out += [f"{_type(schema)}", ""]
    return out


def api_markdown(document: Mapping[str, Any] | None = None) -> str:
    """The Markdown reference of ``document`` (default: the host's, for no particular agents)."""
    doc = document if document is not None else openapi_document("")
    out = [HEADER]
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            out += _route(method, path, op)
    out += ["# Schemas", ""]
    for name, schema in sorted(doc.get("components", {}).get("schemas", {}).items()):
        out += _schema(name, schema)
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(api_markdown())
