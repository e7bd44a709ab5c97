"""Issue 21 (receipts queryable by their owner only, "and the host API if landed"):
``GET /v1/commands/{operation_id}/receipt`` gives a command's receipt to the principal it was
made for, the same as ``agentloom commands receipt --json``; another principal — another actor,
or the same actor in another project — gets exactly the 404 of a receipt that does not exist."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.command.test_cli import agentloom

from .support import make_key, serving
from .test_i18_api import _api

RECEIPT = "/v1/commands/{operation_id}/receipt"
MISSING = "00000000-0000-0000-0000-000000000000"


def test_i21_a_receipt_is_served_to_its_owner_only(tmp_path: Path) -> None:
    folder = tmp_path / "ex"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "commands", folder)
    store = f"sqlite:///{tmp_path / 'al.db'}"
    asked = agentloom("ask", "agentloom.yaml", "move the meeting to friday", "--json",
                      "--store", store, "--actor", "alice", "--project", "acme", cwd=folder)
    assert asked.returncode == 0, asked.stderr
    receipt = json.loads(asked.stdout)["receipt"]
    assert receipt["state"] == "committed"
    shown = json.loads(agentloom("commands", "receipt", receipt["operation_id"], "--store",
                                 store, "--actor", "alice", "--project", "acme", "--json",
                                 cwd=folder).stdout)
    keys = {who: make_key(store, *who) for who in
            [("alice", "acme"), ("bob", "acme"), ("alice", "beta")]}
    with serving(folder / "agentloom.yaml", store, "--no-execute") as base:
        mine = _api(base, keys["alice", "acme"]).get(RECEIPT, operation_id=receipt["operation_id"])
        assert mine.status_code == 200
        assert mine.json() == shown
        missing = _api(base, keys["alice", "acme"]).get(RECEIPT, operation_id=MISSING)
        assert missing.status_code == 404
        assert missing.json()["code"] == "COMMAND_RECEIPT_NOT_FOUND"
        for other in (("bob", "acme"), ("alice", "beta")):
            refused = _api(base, keys[other]).get(RECEIPT, operation_id=receipt["operation_id"])
            assert refused.status_code == 404
            body = json.dumps(refused.json()).replace(receipt["operation_id"], MISSING)
            assert json.loads(body) == missing.json()
        anonymous = _api(base, None).get(RECEIPT, operation_id=receipt["operation_id"])
        assert anonymous.status_code == 401
