"""Issue 18, identity: `agentloom keys create` prints a key once and stores only its digest;
`authenticate` maps `Authorization: Bearer KEY` to its principal (an actor in a project) and
refuses everything else with one message; a revoked key is refused; runs record whom they are
done for. On SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.support import Cli

import agentloom
from agentloom.host import AuthError, authenticate
from agentloom.models.offline import Script, ScriptModel
from agentloom.refs import Principal
from agentloom.store import open_store


def test_i18_keys_create_shows_the_key_once_and_stores_only_its_digest(
        tmp_path: Path, durable_store_url: str) -> None:
    cli = Cli(durable_store_url)
    made = cli.json("keys", "create", "--actor", "alice", "--project", "acme",
                    "--store", cli.store)
    key = made["key"]
    assert key.startswith(f"alk_{made['key_id']}_") and len(key) == 4 + 16 + 1 + 43
    assert (made["actor"], made["project"]) == ("alice", "acme")

    listed = cli("keys", "list", "--store", cli.store, "--json")
    assert listed.exit_code == 0 and key not in listed.stdout
    assert [(k["key_id"], k["actor"], k["project"], k["revoked"])
            for k in cli.json("keys", "list", "--store", cli.store)] == [
        (made["key_id"], "alice", "acme", False)]
    store = open_store(durable_store_url)
    try:
        (row,) = store.query("api_keys")
        assert key not in str(row) and row["digest"] != key and len(row["digest"]) == 64
        assert authenticate(store, f"Bearer {key}") == Principal(actor="alice", project="acme")
        assert authenticate(store, f"bearer   {key} ") == Principal(actor="alice", project="acme")
    finally:
        store.close()
    if durable_store_url.startswith("sqlite:///"):  # not in the file either
        assert key.encode() not in Path(durable_store_url.removeprefix("sqlite:///")).read_bytes()


def test_i18_every_bad_credential_gets_the_same_refusal_and_revoked_keys_are_refused(
        tmp_path: Path, durable_store_url: str) -> None:
    cli = Cli(durable_store_url)
    made = cli.json("keys", "create", "--actor", "bob", "--project", "p1", "--store", cli.store)
    other = cli.json("keys", "create", "--actor", "bob", "--project", "p2", "--store", cli.store)
    key, key_id = made["key"], made["key_id"]
    forged = key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")  # right id, wrong secret
    swapped = f"alk_{other['key_id']}_{key.rsplit('_', 1)[1]}"  # another id, this secret
    store = open_store(durable_store_url)
    try:
        messages = set()
        for header in (None, "", key, f"Basic {key}", "Bearer ", "Bearer alk_x", f"Bearer {forged}",
                       f"Bearer {swapped}", f"Bearer {key}extra", f"Bearer {key.upper()}"):
            with pytest.raises(AuthError) as refused:
                authenticate(store, header)
            assert refused.value.code == "UNAUTHENTICATED"
            messages.add(str(refused.value))
        assert len(messages) == 1  # nothing tells which part was wrong

        revoked = cli.json("keys", "revoke", key_id, "--store", cli.store)
        assert revoked["revoked"] and revoked["revoked_at"] is not None
        again = cli.json("keys", "revoke", key_id, "--store", cli.store)
        assert again["revoked_at"] == revoked["revoked_at"]  # a no-op
        with pytest.raises(AuthError):
            authenticate(store, f"Bearer {key}")
        assert authenticate(store, f"Bearer {other['key']}").project == "p2"
    finally:
        store.close()
    assert cli.json("keys", "list", "--store", cli.store)[0]["key_id"] == other["key_id"]
    assert len(cli.json("keys", "list", "--revoked", "--store", cli.store)) == 2
    unknown = cli("keys", "revoke", "0123456789abcdef", "--store", cli.store)
    assert unknown.exit_code == 1 and "KEY_NOT_FOUND" in unknown.stderr


def test_i18_a_bad_actor_or_project_name_is_refused_naming_it_and_nothing_is_stored(
        tmp_path: Path) -> None:
    cli = Cli(f"sqlite:///{tmp_path / 'k.db'}")
    bad = cli("keys", "create", "--actor", "al ice", "--project", "acme", "--store", cli.store)
    assert bad.exit_code != 0 and "INVALID_NAME" in bad.stderr and "actor 'al ice'" in bad.stderr
    bad = cli("keys", "create", "--actor", "alice", "--project", "\x1b[2J", "--store", cli.store)
    assert bad.exit_code != 0 and "project" in bad.stderr
    assert cli.json("keys", "list", "--revoked", "--store", cli.store) == []


async def test_i18_a_run_records_whom_it_is_done_for(tmp_path: Path, durable_store_url: str) -> None:
    runtime = agentloom.Runtime(
        [agentloom.AgentSpec(name="main", model=ScriptModel(
            Script.model_validate({"turns": [{"text": "done"}]}), source="s"))],
        store=durable_store_url, workspace_root=tmp_path / "ws", sandbox_backend="none")
    try:
        alice = Principal(actor="alice", project="acme")
        ran = await (await runtime.start("task", principal=alice)).result()
        queued = await runtime.submit("later", principal=Principal(actor="bob", project="acme"))
        plain = await runtime.run("from the cli")
        rows = {r["run_id"]: (r["actor"], r["project"]) for r in runtime.store.query("runs")}
        assert rows == {ran.run_id: ("alice", "acme"), queued: ("bob", "acme"),
                        plain.run_id: (None, None)}
    finally:
        await runtime.aclose()
