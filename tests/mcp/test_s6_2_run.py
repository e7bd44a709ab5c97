"""000 §6.2 through the one pipeline: an agent on the scripted model calls real MCP servers as
ordinary capabilities (``mcp.<server>.<tool>``, offered as ``mcp__<server>__<tool>``); hooks
deny, rewrite and patch MCP calls as they do built-in tools; secrets in ``env`` / ``headers``
never reach the store or ``runs show``; ``list_changed`` does not change a running catalog.
Driven through the CLI (``sandbox: {backend: none}`` written explicitly) on SQLite and
PostgreSQL."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_support import LAB
from typer.testing import CliRunner

from agentloom.assembly import runtime_from_config
from agentloom.cli.main import app
from agentloom.config import load_config


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def cli_json(*args: str, exit_code: int = 0) -> Any:
    result = cli(*args, "--json")
    assert result.exit_code == exit_code, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def project(folder: Path, turns: str, *, tools: str, servers: str, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "turns.yaml").write_text("turns:\n" + turns, encoding="utf-8")
    config = folder / "agentloom.yaml"
    config.write_text(
        "version: 1\n"
        f"agents:\n  main:\n    model: {{builtin: script, path: turns.yaml}}\n    tools: [{tools}]\n"
        f"{extra}mcp_servers:\n{servers}sandbox: {{backend: none}}\n", encoding="utf-8")
    return config


def lab_entry(name: str = "lab", env: str = "") -> str:
    return f"  {name}: {{transport: stdio, command: {json.dumps(sys.executable)}, " \
           f"args: [{json.dumps(str(LAB))}]{env}}}\n"


def operations(run_id: str, store: str) -> dict[str, dict[str, Any]]:
    shown = cli_json("runs", "show", run_id, "--store", store)
    return {o["capability"]: o for o in shown["operations"] if o["kind"] == "tool"}


GIT_AND_ECHO = """\
  - tool_calls:
      - {id: g, name: mcp__git__git_status, arguments: {repo_path: "."}}
  - expect: {role: tool, contains: ["new.txt"]}
    tool_calls:
      - {id: e, name: mcp__everything__echo, arguments: {message: hello}}
  - expect: {role: tool, contains: "Echo: hello"}
    text: done
"""


def test_s6_2_agent_run_calls_mcp_server_git_and_everything_through_the_pipeline(
    tmp_path: Path, durable_store_url: str, git_repo: Path, git_server: str, everything: Path,
    node: str,
) -> None:
    servers = (f"  git: {{transport: stdio, command: {json.dumps(git_server)}, "
               "args: [\"--repository\", \".\"], env: {GIT_AUTHOR_NAME: agent}}\n"
               f"  everything: {{transport: stdio, command: {json.dumps(node)}, "
               f"args: [{json.dumps(str(everything))}, stdio]}}\n")
    config = project(tmp_path / "p", GIT_AND_ECHO, tools='"mcp.git.*", mcp.everything.echo',
                     servers=servers, extra=f"workspace: {{bind: {json.dumps(str(git_repo))}}}\n")

    out = cli_json("run", str(config), "look at the repo", "--store", durable_store_url)

    assert out["status"] == "succeeded" and out["output"] == "done", out
    ops = operations(out["run_id"], durable_store_url)
    assert set(ops) == {"mcp.git.git_status", "mcp.everything.echo"}
    status, echo = ops["mcp.git.git_status"], ops["mcp.everything.echo"]
    assert status["status"] == "succeeded" and "new.txt" in status["raw_result"]
    assert echo["status"] == "succeeded" and echo["raw_result"] == "Echo: hello"
    assert echo["executed_arguments"] == {"message": "hello"}
    assert status["attempts"]["count"] == 1 and echo["attempts"]["count"] == 1


HOOKS = '''
def guard(event):
    name = event["capability"]
    if name == "mcp.lab.fail":
        return {"decision": "deny", "reason": "no failures today"}
    if name == "mcp.lab.echo":
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/payload/text", "value": "rewritten"}]}
    return {"decision": "allow"}


def patch(event):
    return {"decision": "allow", "payload_patch": [
        {"op": "replace", "path": "/result/content", "value": [{"type": "text", "text": "[patched]"}]}]}
'''

HOOK_TURNS = """\
  - tool_calls:
      - {id: f, name: mcp__lab__fail, arguments: {}}
  - expect: {role: tool, contains: "denied before execution (nothing ran): no failures today"}
    tool_calls:
      - {id: e, name: mcp__lab__echo, arguments: {text: original}}
  - expect: {role: tool, contains: "echo: rewritten"}
    tool_calls:
      - {id: a, name: mcp__lab__add, arguments: {a: 1, b: 2}}
  - expect: {role: tool, contains: "[patched]"}
    text: done
"""

HOOK_CONFIG = """\
    hooks:
      - {hook_id: guard, timing: before, match: {capability: "mcp.lab.*"}, handler: {ref: "mcp_hooks:guard"}}
      - {hook_id: patch, timing: after, match: {capability: mcp.lab.add}, handler: {ref: "mcp_hooks:patch"}}
"""


def test_s6_2_hooks_deny_rewrite_and_patch_mcp_calls_recorded_like_built_in_tools(
    tmp_path: Path, durable_store_url: str,
) -> None:
    folder = tmp_path / "p"
    config = project(folder, HOOK_TURNS, tools='"mcp.lab.*"', servers=lab_entry(), extra="")
    config.write_text(config.read_text().replace(
        "    tools: [\"mcp.lab.*\"]\n", "    tools: [\"mcp.lab.*\"]\n" + HOOK_CONFIG), encoding="utf-8")
    (folder / "mcp_hooks.py").write_text(HOOKS, encoding="utf-8")

    out = cli_json("run", str(config), "use the lab", "--store", durable_store_url)

    assert out["status"] == "succeeded" and out["output"] == "done", out
    ops = operations(out["run_id"], durable_store_url)
    denied, echo, added = ops["mcp.lab.fail"], ops["mcp.lab.echo"], ops["mcp.lab.add"]
    assert denied["outcome"] == "denied_before_execution" and denied["attempts"]["count"] == 0
    assert echo["proposed_arguments"] == {"text": "original"}
    assert echo["executed_arguments"] == {"text": "rewritten"} and echo["arguments_changed"] is True
    assert echo["raw_result"] == "echo: rewritten"
    assert json.loads(added["raw_result"]) == {"total": 3}
    assert added["effective_result"] == "[patched]" and added["result_changed"] is True
    assert [(h["hook_id"], h["decision"]) for h in added["hooks"]] == [("guard", "allow"),
                                                                        ("patch", "allow")]


SECRET_TURNS = """\
  - tool_calls:
      - {id: h, name: mcp__labh__echo, arguments: {text: over http}}
  - expect: {role: tool, contains: "echo: over http"}
    tool_calls:
      - {id: s, name: mcp__lab__echo, arguments: {text: over stdio}}
  - expect: {role: tool, contains: "echo: over stdio"}
    tool_calls:
      - {id: b, name: mcp__lab__boom, arguments: {env: LAB_TOKEN}}
  - expect: {role: tool, contains: "the lab server exploded (token [redacted])"}
    text: done
"""

HEADER_TOKEN = "hdr-tok-5b1f0c7e9a"
ENV_SECRET = "env-sec-0d7f3a91c2"


def test_s6_2_header_token_and_env_secret_never_reach_the_store_runs_show_output_or_errors(
    tmp_path: Path, durable_store_url: str, lab_http: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAB_HTTP_TOKEN", HEADER_TOKEN)
    monkeypatch.setenv("LAB_ENV_SECRET", ENV_SECRET)
    servers = (f"  labh: {{transport: http, url: {json.dumps(lab_http)}, "
               "headers: {Authorization: \"Bearer ${LAB_HTTP_TOKEN}\"}}\n"
               + lab_entry(env=", env: {LAB_TOKEN: \"${LAB_ENV_SECRET}\"}"))
    config = project(tmp_path / "p", SECRET_TURNS,
                     tools="mcp.labh.echo, mcp.lab.echo, mcp.lab.boom", servers=servers)

    ran = cli("run", str(config), "echo twice", "--store", durable_store_url, "--json")
    out = json.loads(ran.stdout)

    assert out["status"] == "succeeded", out
    # the server echoed the env secret in its error: the model, the record, the output see it
    # replaced (and the run's own output, stdout and stderr, holds neither secret)
    assert HEADER_TOKEN not in ran.stdout + ran.stderr and ENV_SECRET not in ran.stdout + ran.stderr
    boom = operations(out["run_id"], durable_store_url)["mcp.lab.boom"]
    assert "[redacted]" in json.dumps(boom["error"]), boom
    shown = cli("runs", "show", out["run_id"], "--store", durable_store_url, "--json")
    events = cli("runs", "events", out["run_id"], "--store", durable_store_url, "--json")
    human = cli("runs", "show", out["run_id"], "--store", durable_store_url)
    for text in (shown.stdout, events.stdout, human.stdout, shown.stderr, events.stderr):
        assert HEADER_TOKEN not in text and ENV_SECRET not in text
    stored = _stored_bytes(durable_store_url)
    assert stored and HEADER_TOKEN.encode() not in stored and ENV_SECRET.encode() not in stored


def _stored_bytes(url: str) -> bytes:
    """Every byte the store holds: the SQLite file with its WAL, or every row of every table of
    the PostgreSQL schema as text."""
    if url.startswith("sqlite:///"):
        db = Path(url.removeprefix("sqlite:///"))
        return b"".join(p.read_bytes() for p in sorted(db.parent.glob(db.name + "*")))
    import psycopg

    base, _, query = url.partition("?")
    schema = query.removeprefix("schema=")
    out = []
    with psycopg.connect(base) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,))]
        for table in tables:
            rows = conn.execute(f'SELECT t::text FROM "{schema}"."{table}" t').fetchall()
            out.extend(r[0].encode() for r in rows)
    return b"\n".join(out)


LIST_CHANGED_TURNS = """\
  - tool_calls:
      - {id: g, name: mcp__labh__grow, arguments: {}}
  - expect: {role: tool, contains: "grown"}
    tool_calls:
      - {id: l, name: mcp__labh__late, arguments: {}}
  - expect: {role: tool, contains: "tool 'mcp__labh__late' is not offered"}
    text: the catalog held
"""


async def test_s6_2_list_changed_during_a_run_keeps_its_catalog_and_versions_the_next(
    tmp_path: Path, durable_store_url: str, lab_http: str,
) -> None:
    servers = f"  labh: {{transport: http, url: {json.dumps(lab_http)}}}\n"
    config = project(tmp_path / "p", LIST_CHANGED_TURNS, tools='"mcp.labh.*"', servers=servers)
    before = runtime_from_config(load_config(config), store=durable_store_url)
    try:
        result = await before.run("grow the lab")
    finally:
        await before.aclose()
    after = runtime_from_config(load_config(config), store=durable_store_url)
    await after.aclose()

    assert result.status == "succeeded" and result.output == "the catalog held", result.error
    assert "mcp.labh.late" not in _keys(before) and "mcp.labh.late" in _keys(after)
    assert after.catalog_version != before.catalog_version


def _keys(runtime: Any) -> set[str]:
    catalog = runtime.kernel.registry.for_role(runtime.release_id, "main")
    return {spec.capability_key for spec in catalog.specs.values()}
