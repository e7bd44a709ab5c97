"""Issue 18 acceptance 2 (isolation): two actors in two projects — and an actor of the same
project, and the same actor name in another project — cannot read or control a run of
another principal: every attempt (the run, its operations, events over SSE, workspace listing
and files, stop, supplement, resume, approve, reject) is a 404 with exactly the body of a run
that does not exist, and changes nothing. A run started from the CLI (no principal) is
invisible to every key. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
from tests.cli.support import Cli

from .support import Api, make_key, serving, wait_status
from .test_i18_api import RUN, _api, _project

MISSING = "00000000-0000-0000-0000-000000000000"


def _attempts(api: Api, run_id: str, op: str) -> list[httpx2.Response]:
    """Every read and control of one run (ten requests)."""
    ids = {"run_id": run_id}
    return [
        api.get(RUN, **ids),
        api.get(RUN + "/operations", **ids),
        api.get(RUN + "/events", **ids),
        api.get(RUN + "/workspace", **ids),
        api.get(RUN + "/workspace/{path}", path="hello.txt", **ids),
        api.post(RUN + "/stop", body={"reason": "mine now"}, **ids),
        api.post(RUN + "/supplement", body={"text": "do something else"}, **ids),
        api.post(RUN + "/resume", **ids),
        api.post(RUN + "/operations/{operation_id}/approve", operation_id=op, **ids),
        api.post(RUN + "/operations/{operation_id}/reject", operation_id=op, **ids),
    ]


def _as_missing(template: dict[str, Any], run_id: str) -> dict[str, Any]:
    """The body a missing run ``run_id`` gets (from the real answer for ``MISSING``)."""
    return dict(json.loads(json.dumps(template).replace(MISSING, run_id)))


def test_i18_2_cross_owner_access_is_404_with_the_body_of_a_missing_run(
        tmp_path: Path, durable_store_url: str) -> None:
    config = _project(tmp_path, asking=True)  # every run waits for an approval
    keys = {who: make_key(durable_store_url, *who) for who in
            [("alice", "acme"), ("bob", "beta"), ("carol", "acme"), ("alice", "beta")]}
    cli_run = Cli(durable_store_url).json("submit", str(config), "a CLI run", "--store",
                                          durable_store_url)["run_id"]
    with serving(config, durable_store_url) as base:
        apis = {who: _api(base, key) for who, key in keys.items()}
        alice = apis["alice", "acme"]
        run = alice.post("/v1/runs", body={"task": "write", "wait": True}).json()
        assert run["status"] == "waiting"
        (asked,) = run["diagnosis"]["waiting_for"]["approvals"]
        op = asked["operation_id"]
        missing = alice.get(RUN, run_id=MISSING)
        assert missing.status_code == 404
        template = missing.json()
        assert template["code"] == "RUN_NOT_FOUND"

        refused = 0
        targets = [(who, run["run_id"]) for who in apis if who != ("alice", "acme")]
        targets += [(who, cli_run) for who in (("alice", "acme"), ("bob", "beta"))]
        for who, run_id in targets:
            for response in _attempts(apis[who], run_id, op):
                assert response.status_code == 404, (who, response.request.url, response.text)
                assert response.headers["content-type"] == "application/problem+json"
                assert response.json() == _as_missing(template, run_id), response.request.url
                refused += 1
        assert refused >= 30

        for who in apis:
            listed = {r["run_id"] for r in apis[who].get("/v1/runs").json()["items"]}
            assert listed == ({run["run_id"]} if who == ("alice", "acme") else set()), who
        still = alice.get(RUN, run_id=run["run_id"]).json()
        assert still["status"] == "waiting"
        assert [a["operation_id"] for a in still["diagnosis"]["waiting_for"]["approvals"]] == [op]

        answered = alice.post(RUN + "/operations/{operation_id}/approve",
                              run_id=run["run_id"], operation_id=op)
        assert answered.status_code == 200 and answered.json()["actor"] == "alice"
        done = wait_status(alice, run["run_id"], {"succeeded", "failed", "cancelled"})
        assert done["status"] == "succeeded"
        ops = alice.get(RUN + "/operations", run_id=run["run_id"]).json()["items"]
        models = [o for o in ops if o["kind"] == "model"]
        assert "do something else" not in json.dumps(models)  # no intruder's supplement
