"""Issue 18 acceptance 1, what the Schemathesis run found, one contract each: an integral
number is an integer, null is an absent optional field, the document names the served agents
and only the statuses the list filters by, SSE events match the documented event, and a
workspace path with no file there is a 404 (a malformed one a 400). The app runs in process
on a real runtime and a real SQLite store; every response is checked against the document."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from jsonschema import Draft202012Validator

from agentloom.assembly import runtime_from_config
from agentloom.config import load_config
from agentloom.host.app import create_app
from agentloom.refs import Principal

from .support import conforms, make_key, sse
from .test_i18_1_schemathesis import Seeded, _project, _seed

RUN = "/v1/runs/{run_id}"


@dataclass
class Host:
    client: httpx2.AsyncClient
    doc: dict[str, Any]
    seeded: Seeded

    async def call(self, method: str, template: str, *, body: Any = None,
                   headers: dict[str, str] | None = None, **path: str) -> httpx2.Response:
        content = None if body is None else json.dumps(body).encode()
        response = await self.client.request(method, template.format(**path), content=content,
                                             headers=headers)
        conforms(self.doc, method, template, response)
        return response

    def schema(self, name: str) -> Draft202012Validator:
        return Draft202012Validator({**self.doc["components"]["schemas"][name],
                                     "components": self.doc["components"]})


@pytest.fixture
def seeded_store(tmp_path: Path) -> tuple[str, str, Path, Seeded]:
    """The store URL, a key of alice in acme, the config and alice's runs."""
    url = f"sqlite:///{tmp_path / 'agentloom.db'}"
    principal = Principal(actor="alice", project="acme")
    key = make_key(url, principal.actor, principal.project)
    config = _project(tmp_path / "p")
    return url, key, config, asyncio.run(_seed(config, url, principal))


@pytest.fixture
async def host(seeded_store: tuple[str, str, Path, Seeded]) -> AsyncIterator[Host]:
    url, key, config, seeded = seeded_store
    runtime = runtime_from_config(load_config(config), store=url)
    app = create_app(runtime, execute=False, wait_s=0.1)
    transport = httpx2.ASGITransport(app=app)
    try:
        async with httpx2.AsyncClient(transport=transport, base_url="http://host",
                                      headers={"Authorization": f"Bearer {key}"}) as client:
            doc = (await client.get("/openapi.json")).json()
            yield Host(client, doc, seeded)
    finally:
        await runtime.aclose()


async def test_i18_1_an_integral_number_is_an_integer_priority(host: Host) -> None:
    created = await host.call("POST", "/v1/runs", body={"task": "t", "priority": 102.0})
    assert created.status_code == 201, created.text
    refused = await host.call("POST", "/v1/runs", body={"task": "t", "priority": 1.5})
    assert refused.status_code == 400 and "'priority'" in refused.json()["detail"]


async def test_i18_1_null_is_an_absent_optional_field(host: Host) -> None:
    body = {"task": "t", "agent": None, "wait": None, "priority": None}
    request_schema = host.doc["paths"]["/v1/runs"]["post"]["requestBody"]["content"][
        "application/json"]["schema"]
    Draft202012Validator(request_schema).validate(body)
    created = await host.call("POST", "/v1/runs", body=body)
    assert created.status_code == 201 and created.json()["agent"] == "main"
    host.schema("Stop").validate({"reason": None})
    stopped = await host.call("POST", RUN + "/stop", body={"reason": None},
                              run_id=created.json()["run_id"])
    assert stopped.status_code == 202


async def test_i18_1_the_document_names_the_agents_a_run_may_be_created_for(host: Host) -> None:
    body = host.doc["paths"]["/v1/runs"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["properties"]["agent"]["enum"] == ["asker", "main", None]
    for agent in ("", "nobody"):
        refused = await host.call("POST", "/v1/runs", body={"task": "t", "agent": agent})
        assert refused.status_code == 400 and "'agent'" in refused.json()["detail"], agent


async def test_i18_1_every_status_the_document_offers_filters_the_list(host: Host) -> None:
    (status,) = [p for p in host.doc["paths"]["/v1/runs"]["get"]["parameters"]
                 if p["name"] == "status"]
    for value in status["schema"]["enum"]:
        listed = await host.client.get("/v1/runs", params={"status": value})
        conforms(host.doc, "GET", "/v1/runs", listed)
        assert listed.status_code == 200, (value, listed.text)


async def test_i18_1_sse_events_match_the_documented_event(host: Host) -> None:
    (run_id,) = host.seeded.ended
    for last in ("", "2"):
        stream = await host.call("GET", RUN + "/events", run_id=run_id,
                                 headers={"Last-Event-ID": last})
        assert stream.status_code == 200
        raw = [dict(e, data=json.dumps(e["data"])) for e in sse(iter(stream.text.split("\n")))]
        assert raw and raw[-1]["event"] == "run.finished"
        assert int(raw[0]["id"]) == (int(last) + 1 if last else 1)
        declared = host.doc["paths"][RUN + "/events"]["get"]["responses"]["200"]["content"]
        each = Draft202012Validator({**declared["text/event-stream"]["schema"],
                                     "components": host.doc["components"]})
        for event in raw:
            each.validate(event)
            host.schema("RunEvent").validate(json.loads(event["data"]))


async def test_i18_1_a_workspace_path_with_no_file_is_404_and_a_malformed_one_400(
        host: Host) -> None:
    (run_id,) = host.seeded.ended
    found = await host.call("GET", RUN + "/workspace/{path}", run_id=run_id, path="hello.txt")
    assert (found.status_code, found.content) == (200, b"hi there")
    for path, code in (("", "FILE_NOT_FOUND"), ("%2E", "IS_A_DIRECTORY"),
                       ("missing.txt", "NOT_FOUND"), ("..%2Fx", "PATH_ESCAPE")):
        missing = await host.call("GET", RUN + "/workspace/{path}", run_id=run_id, path=path)
        assert (missing.status_code, missing.json()["code"]) == (404, code), path
    malformed = await host.call("GET", RUN + "/workspace/{path}", run_id=run_id, path="a%00b")
    assert (malformed.status_code, malformed.json()["code"]) == (400, "INVALID_PATH")


async def test_i18_1_a_task_is_blank_only_as_the_document_says(host: Host) -> None:
    pattern = host.schema("RunCreate")
    assert pattern.is_valid({"task": "\x1e"}) and not pattern.is_valid({"task": " \t\r\n"})
    created = await host.call("POST", "/v1/runs", body={"task": "\x1e"})
    assert created.status_code == 201, created.text
    refused = await host.call("POST", "/v1/runs", body={"task": " \t\r\n"})
    assert refused.status_code == 400 and "'task'" in refused.json()["detail"]
