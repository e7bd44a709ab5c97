"""Issue #16 acceptance 1 (000 §6.1): skills at run time, driven through the CLI with the
scripted model on SQLite and PostgreSQL — the model lists and reads a skill (its body, then a
referenced file), runs its script from ``/skills/<name>/scripts/`` with ``exec`` in the sandbox
and the output lands in the workspace; every read and the script run are recorded operations;
versions are bound when the runtime is built, so a re-import does not change a runtime built
before it."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentloom.assembly import runtime_from_config
from agentloom.cli.main import app
from agentloom.config import load_config
from agentloom.errors import ConfigError
from agentloom.sandbox import SandboxError, make_gateway
from agentloom.sandbox.ports import EnvironmentPolicy

from .support import write_skill

HELLO_PY = """\
import pathlib, sys
pathlib.Path("hello-out.txt").write_text("hello from the skill\\n")
print("wrote hello-out.txt from", sys.argv[0])
"""


def cli_json(*args: str, exit_code: int = 0) -> Any:
    result = CliRunner().invoke(app, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == exit_code, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def skills_folder(root: Path) -> Path:
    folder = root / "skills"
    write_skill(folder, "hello", {"scripts/hello.py": HELLO_PY,
                                  "references/notes.md": "NOTES-MARKER: run scripts/hello.py\n"},
                description="Greets by writing hello-out.txt. Use when asked to greet.",
                body="# Hello\nBODY-MARKER-V1: run /skills/hello/scripts/hello.py; see "
                     "references/notes.md\n")
    write_skill(folder, "release-notes", description="Drafts release notes from a changelog.",
                body="RELEASE-BODY\n")
    write_skill(folder, "secret-ops", description="Only a user may start this one.",
                extra="disable-model-invocation: true\n", body="SECRET-BODY\n")
    return folder


@pytest.fixture
def searchable() -> Iterator[Path]:
    """A folder whose parents the sandbox uid can search (pytest's own are 0700): the
    workspace root — and so the skills' folders, reached by path — must be below one."""
    folder = Path(tempfile.mkdtemp(prefix="agentloom-skills-"))
    folder.chmod(0o711)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def require_backend(backend: str, searchable: Path) -> None:
    try:
        make_gateway(EnvironmentPolicy(), backend=backend,  # type: ignore[arg-type]
                     output_dir=searchable / f"probe-{backend}")
    except SandboxError as exc:
        pytest.skip(f"the {backend} sandbox cannot run on this host: {exc}")


TURNS = """\
turns:
  - tool_calls:
      - {id: l, name: skill_list, arguments: {}}
  - expect: {role: tool, contains: ["hello", "release-notes"]}
    tool_calls:
      - {id: b, name: skill_read, arguments: {name: hello}}
  - expect: {role: tool, contains: "BODY-MARKER-V1"}
    tool_calls:
      - {id: r, name: skill_read, arguments: {name: hello, path: references/notes.md}}
  - expect: {role: tool, contains: "NOTES-MARKER"}
    tool_calls:
      - {id: x, name: exec, arguments: {argv: [python3, /skills/hello/scripts/hello.py]}}
  - expect: {role: tool, contains: "wrote hello-out.txt"}
    tool_calls:
      - {id: m, name: exec, arguments: {argv: [no-such-python, /skills/hello/scripts/hello.py]}}
  - expect: {role: tool, contains: ["no-such-python", "No such file"]}
    text: done
"""


def project(root: Path, backend: str, turns: str = TURNS, *,
            workspaces: Path | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "turns.yaml").write_text(turns, encoding="utf-8")
    config = root / "agentloom.yaml"
    config.write_text(
        "version: 1\n"
        "skills:\n  - {path: ./skills}\n"
        "agents:\n  main:\n    model: {builtin: script, path: turns.yaml}\n"
        "    tools: [exec]\n    skills: \"*\"\n"
        f"sandbox: {{backend: {backend}}}\nworkspace: {{keep: true"
        f"{', root: ' + json.dumps(str(workspaces)) if workspaces else ''}}}\n", encoding="utf-8")
    return config


@pytest.mark.parametrize("backend", ["bubblewrap", "landlock"])
def test_issue16_model_lists_reads_and_runs_a_skill_script_in_the_sandbox_all_recorded(
    tmp_path: Path, durable_store_url: str, searchable: Path, backend: str,
) -> None:
    require_backend(backend, searchable)
    skills_folder(tmp_path / "p")
    config = project(tmp_path / "p", backend, workspaces=searchable / "workspaces")
    imported = cli_json("skills", "import", "--config", str(config), "--store", durable_store_url)
    assert sorted(s["name"] for r in imported for s in r["skills"]) == [
        "hello", "release-notes", "secret-ops"]

    out = cli_json("run", str(config), "greet", "--store", durable_store_url)

    assert out["status"] == "succeeded" and out["output"] == "done", out
    assert (Path(out["workspace"]) / "hello-out.txt").read_text() == "hello from the skill\n"
    shown = cli_json("runs", "show", out["run_id"], "--store", durable_store_url)
    tools = [(o["capability"], o["status"]) for o in shown["operations"] if o["kind"] == "tool"]
    assert tools == [("skill.list", "succeeded"), ("skill.read", "succeeded"),
                     ("skill.read", "succeeded"), ("exec", "succeeded"),
                     ("exec", "succeeded")], tools  # a missing interpreter: exit 127, no install


def test_issue16_prompt_lists_name_description_entry_never_the_body_nor_hidden_skills(
    tmp_path: Path, durable_store_url: str,
) -> None:
    skills_folder(tmp_path / "p")
    config = project(tmp_path / "p", "none")
    cli_json("skills", "import", "--config", str(config), "--store", durable_store_url)

    runtime = runtime_from_config(load_config(config), store=durable_store_url)
    try:
        spec = runtime.agents["main"]
        prompt = spec.instructions
        assert "entry is /skills/<name>/SKILL.md" in prompt
        assert "\n- hello: Greets by writing hello-out.txt. Use when asked to greet." in prompt
        assert "release-notes" in prompt
        assert "BODY-MARKER" not in prompt and "RELEASE-BODY" not in prompt
        assert "secret-ops" not in prompt  # disable-model-invocation: not listed to the model
        assert spec.tool_keys() == ["exec", "skill.list", "skill.read"]
    finally:
        runtime.kernel.close()


def test_issue16_versions_are_bound_at_build_a_runtime_built_before_a_reimport_keeps_its_version(
    tmp_path: Path, durable_store_url: str,
) -> None:
    folder = skills_folder(tmp_path / "p")
    turns = ("turns:\n  - tool_calls:\n      - {id: b, name: skill_read, arguments: {name: hello}}\n"
             "  - expect: {role: tool, contains: \"%s\"}\n    text: read\n")
    config = project(tmp_path / "p", "none", turns % "BODY-MARKER-V1")
    cli_json("skills", "import", "--config", str(config), "--store", durable_store_url)
    before = runtime_from_config(load_config(config), store=durable_store_url)

    skill_md = folder / "hello" / "SKILL.md"
    skill_md.write_text(skill_md.read_text().replace("BODY-MARKER-V1", "BODY-MARKER-V2"))
    report = cli_json("skills", "import", str(folder), "--store", durable_store_url)
    assert {s["name"]: s["status"] for s in report["skills"]}["hello"] == "new"
    (tmp_path / "p" / "turns.yaml").write_text(turns % "BODY-MARKER-V2", encoding="utf-8")
    after = runtime_from_config(load_config(config), store=durable_store_url)
    try:
        assert before.release_id != after.release_id  # the digests are part of the release
        old = before.kernel.skills.bound()["main"]["hello"]
        new = after.kernel.skills.bound()["main"]["hello"]
        assert old != new
        import asyncio

        result = asyncio.run(before.run("read it"))
        assert result.status == "succeeded", result.error  # its script expected V1: it read V1
        result = asyncio.run(after.run("read it"))
        assert result.status == "succeeded", result.error  # a new runtime reads V2
    finally:
        before.kernel.close()
        after.kernel.close()


def test_issue16_a_skill_not_imported_fails_the_build_naming_it(
    tmp_path: Path, durable_store_url: str,
) -> None:
    root = tmp_path / "p"
    config = project(root, "none")
    config.write_text(config.read_text().replace('skills: "*"', "skills: [pdf]"))
    (root / "skills").mkdir()

    with pytest.raises(ConfigError) as caught:
        runtime_from_config(load_config(config), store=durable_store_url)

    assert "agents.main.skills[0]" in str(caught.value) and "'pdf'" in str(caught.value)
    shutil.rmtree(root)
