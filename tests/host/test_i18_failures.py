"""Issue 18, errors: a failure the host did not expect (here: its store is gone) is a 500
problem that says nothing about the internals — no traceback, no driver message — and is
logged; readiness says 503 while health stays up. The app runs in process (ASGI) on a real
runtime and a real SQLite store."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import httpx2
import pytest
from jsonschema import Draft202012Validator
from starlette.applications import Starlette
from starlette.routing import Route
from tests.cli.support import write_project

from agentloom.agent import Runtime
from agentloom.assembly import runtime_from_config
from agentloom.config import load_config
from agentloom.host.app import create_app

from .support import WRITE, conforms, make_key


def test_i18_1_an_unexpected_failure_is_a_500_problem_without_internals(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    url = f"sqlite:///{tmp_path / 'agentloom.db'}"
    key = make_key(url, "alice", "acme")
    runtime = runtime_from_config(load_config(write_project(tmp_path / "p", WRITE)), store=url)
    asyncio.run(_exercise(create_app(runtime, execute=False), runtime, key,
                          caplog))


async def _exercise(app: Starlette, runtime: Runtime, key: str,
                    caplog: pytest.LogCaptureFixture) -> None:
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://host") as client:
        doc = (await client.get("/openapi.json")).json()
        ok = await client.get("/v1/runs", headers={"Authorization": f"Bearer {key}"})
        assert ok.status_code == 200
        runtime.store.close()  # the store goes away under the running app
        with caplog.at_level(logging.ERROR, logger="agentloom.host"):
            failed = await client.get("/v1/runs", headers={"Authorization": f"Bearer {key}"})
        assert failed.status_code == 500
        conforms(doc, "GET", "/v1/runs", failed)
        problem = failed.json()
        assert problem["code"] == "INTERNAL_ERROR" and problem["status"] == 500
        assert "Traceback" not in failed.text and "sqlite" not in failed.text.lower()
        assert any("failed on a request" in r.getMessage() and r.exc_info for r in caplog.records)
        assert (await client.get("/ready")).status_code == 503
        assert (await client.get("/health")).status_code == 200


def test_i18_1_the_openapi_document_describes_every_route(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agentloom.db'}"
    runtime = runtime_from_config(load_config(write_project(tmp_path / "p", WRITE)), store=url)
    try:
        app = create_app(runtime, execute=False)
        doc = app.state.openapi
        served = {(route.path.replace("{path:path}", "{path}"), method.lower())
                  for route in app.routes if isinstance(route, Route)
                  for method in (route.methods or ()) if method != "HEAD"}
        described = {(path, method) for path, item in doc["paths"].items() for method in item}
        assert served - {("/openapi.json", "get")} == described
        assert doc["openapi"] == "3.1.0"
        assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
        for name, schema in doc["components"]["schemas"].items():
            Draft202012Validator.check_schema({**schema, "$id": f"urn:schema:{name}"})
        for path, item in doc["paths"].items():
            for method, operation in item.items():
                secured = operation.get("security", doc["security"]) != []
                assert secured == path.startswith("/v1/"), (path, method)
                if secured:
                    assert {"401", "404", "500"} <= set(operation["responses"]), (path, method)
    finally:
        asyncio.run(runtime.aclose())
