"""Issue #35 item 6: one source of truth for the host's HTTP shapes. Request and response bodies
are pydantic models (``host.shapes``); the routes validate with them and the OpenAPI document is
generated from them plus the route table (``host.openapi.ROUTES``). Pinned here: every route the
app serves is in the generated document, every POST route refuses a bad body exactly as the
model its document names does, and the refusals read as they did when they were written by
hand. The app runs in process on a real runtime and a real SQLite store."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import httpx2
import pytest
from starlette.routing import Route
from tests.cli.support import write_project

from agentloom.agent import Runtime
from agentloom.assembly import runtime_from_config
from agentloom.config import load_config
from agentloom.host import shapes
from agentloom.host.app import create_app
from agentloom.host.openapi import ROUTES, component_schemas, openapi_document
from agentloom.host.problems import Problem
from agentloom.refs import Principal
from agentloom.results import RunStatus as StoredStatus

from .support import WRITE, conforms, make_key

WRONG = [1]  # a JSON value no field of any request body takes
SERVED_ELSEWHERE = {("/openapi.json", "get")}  # the document itself


@dataclass
class Host:
    client: httpx2.AsyncClient
    doc: dict[str, Any]
    runtime: Runtime
    app: Any
    run_id: str


PRINCIPAL = Principal(actor="alice", project="acme")


@pytest.fixture
def keyed_store(tmp_path: Path) -> tuple[str, str]:
    """A store URL and a key of alice in acme."""
    url = f"sqlite:///{tmp_path / 'agentloom.db'}"
    return url, make_key(url, PRINCIPAL.actor, PRINCIPAL.project)


@pytest.fixture
async def host(tmp_path: Path, keyed_store: tuple[str, str]) -> AsyncIterator[Host]:
    url, key = keyed_store
    runtime = runtime_from_config(load_config(write_project(tmp_path / "p", WRITE)), store=url)
    app = create_app(runtime, execute=False, wait_s=0.1)
    try:
        run_id = await runtime.submit("queued", principal=PRINCIPAL)
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app),
                                      base_url="http://host",
                                      headers={"Authorization": f"Bearer {key}"}) as client:
            doc = (await client.get("/openapi.json")).json()
            yield Host(client, doc, runtime, app, run_id)
    finally:
        await runtime.aclose()


def _refusal(model: type[shapes.RequestBody], body: dict[str, Any]) -> dict[str, Any]:
    """The problem ``parse`` makes of ``body`` for ``model``."""
    with pytest.raises(Problem) as refused:
        shapes.parse(model, body)
    return refused.value.to_dict()


def _valid(model: type[shapes.RequestBody]) -> dict[str, Any]:
    """A body with each required field of ``model`` set (every one is a string)."""
    return {name: "t" for name, info in model.model_fields.items() if info.is_required()}


async def test_i35_6_every_route_the_app_serves_is_in_the_generated_document(host: Host) -> None:
    served = {(route.path.replace("{path:path}", "{path}"), method.lower())
              for route in host.app.routes if isinstance(route, Route)
              for method in (route.methods or ()) if method != "HEAD"}
    table = {(route.path, route.method) for route in ROUTES}
    described = {(path, method) for path, item in host.doc["paths"].items() for method in item}
    assert served - SERVED_ELSEWHERE == table == described
    assert len(table) == len(ROUTES), "one entry per route"
    assert host.doc == openapi_document(host.doc["info"]["version"], agents=sorted(
        host.runtime.agents), workflows=[])
    schemas = component_schemas()
    assert host.doc["components"]["schemas"] == schemas
    for model in (*shapes.REQUESTS, *shapes.RESPONSES):
        assert model.__name__ in schemas, model


async def test_i35_6_each_post_route_refuses_a_bad_body_as_its_model_does(host: Host) -> None:
    ids = {"run_id": host.run_id, "operation_id": "op-1"}
    posted = [route for route in ROUTES if route.method == "post"]
    assert {r.body for r in posted} == set(shapes.REQUESTS) | {None}
    for route in posted:
        declared = host.doc["paths"][route.path]["post"]
        if route.body is None:
            assert "requestBody" not in declared, route.path
            continue
        model = route.body
        schema = declared["requestBody"]["content"]["application/json"]["schema"]
        expected = host.doc["components"]["schemas"][model.__name__]
        if "$ref" in schema:
            assert schema == {"$ref": f"#/components/schemas/{model.__name__}"}, route.path
        else:  # RunCreate: inline, its agent and workflow named from the configuration
            assert {**schema, "properties": {k: {f: v for f, v in p.items() if f != "enum"}
                                             for k, p in schema["properties"].items()}} == expected
        assert set(expected["properties"]) == set(model.model_fields), route.path
        bodies = [{**_valid(model), name: WRONG} for name in model.model_fields]
        bodies += [{k: v for k, v in _valid(model).items() if k != name}
                   for name in _valid(model)]
        for body in bodies:
            answer = await host.client.post(route.path.format(**ids), content=json.dumps(body))
            conforms(host.doc, "POST", route.path, answer)
            assert answer.status_code == 400, (route.path, body, answer.text)
            assert answer.json() == _refusal(model, body), (route.path, body)


REFUSALS = [  # as access.field and the routes wrote them by hand before the shapes
    (shapes.RunCreate, {}, "the body needs the field 'task'"),
    (shapes.RunCreate, {"task": None}, "the body needs the field 'task'"),
    (shapes.RunCreate, {"task": 3}, "the field 'task' must be a string, got 3"),
    (shapes.RunCreate, {"task": " \t\r\n"},
     "the field 'task' must not be empty nor only spaces, tabs and line breaks"),
    (shapes.RunCreate, {"task": "t", "agent": 1}, "the field 'agent' must be a string, got 1"),
    (shapes.RunCreate, {"task": "t", "workflow": {}},
     "the field 'workflow' must be a string, got {}"),
    (shapes.RunCreate, {"task": "t", "wait": "yes"},
     "the field 'wait' must be true or false, got \"yes\""),
    (shapes.RunCreate, {"task": "t", "wait": 1}, "the field 'wait' must be true or false, got 1"),
    (shapes.RunCreate, {"task": "t", "priority": 1.5},
     "the field 'priority' must be an integer, got 1.5"),
    (shapes.RunCreate, {"task": "t", "priority": True},
     "the field 'priority' must be an integer, got true"),
    (shapes.RunCreate, {"task": "t", "priority": "1"},
     "the field 'priority' must be an integer, got \"1\""),
    (shapes.RunCreate, {"task": "t", "priority": 99999999999999999999},
     "the field 'priority' must be from -2147483647 to 2147483647, got 99999999999999999999"),
    (shapes.RunCreate, {"task": "t", "priority": -1e20}, "the field 'priority' must be from "
     "-2147483647 to 2147483647, got -100000000000000000000"),
    (shapes.RunCreate, {"task": "t", "priority": "x" * 100},
     "the field 'priority' must be an integer, got " + json.dumps("x" * 100)[:80]),
    (shapes.Supplement, {}, "the body needs the field 'text'"),
    (shapes.Supplement, {"text": False}, "the field 'text' must be a string, got false"),
    (shapes.Stop, {"reason": 2}, "the field 'reason' must be a string, got 2"),
    (shapes.Answer, {"reason": ["r"]}, "the field 'reason' must be a string, got [\"r\"]"),
]


@pytest.mark.parametrize(("model", "body", "detail"), REFUSALS)
def test_i35_6_refusals_read_as_they_did_by_hand(model: type[shapes.RequestBody],
                                                 body: dict[str, Any], detail: str) -> None:
    problem = _refusal(model, body)
    assert (problem["status"], problem["code"], problem["detail"]) == (400, "INVALID_REQUEST",
                                                                      detail)


def test_i35_6_the_shown_statuses_are_the_stored_ones_and_interrupted() -> None:
    assert set(shapes.RunStatus) == {*get_args(StoredStatus), "interrupted"}


def test_i35_6_a_valid_body_parses_null_as_absent_and_an_integral_number_as_an_integer() -> None:
    body = shapes.parse(shapes.RunCreate, {"task": "\x1e", "agent": None, "wait": None,
                                           "priority": 102.0, "unknown": "ignored"})
    assert (body.task, body.agent, body.wait, body.priority) == ("\x1e", None, None, 102)
    assert isinstance(body.priority, int)
    assert shapes.parse(shapes.Stop, {}).reason is None
    assert shapes.parse(shapes.Supplement, {"text": ""}).text == ""
