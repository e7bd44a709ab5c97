"""Issue #35 item 5: ``pip install agentloom`` gives the core, the CLI, SQLite and the model
gateway; MCP, A2A, the HTTP host, PostgreSQL and OpenTelemetry come with extras, and a feature
whose extra is missing is a one-line error naming it.

Each check runs in a Python whose ``sys.meta_path`` refuses every module no distribution of
the install under test provides: the closure of pyproject's ``dependencies`` (plus the extras
named), walked through the installed distributions' own requirements — what ``pip install
agentloom`` would have put there, taken from this virtualenv.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from agentloom.extras import EXTRAS

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
OPTIONAL: dict[str, list[str]] = PROJECT["optional-dependencies"]
FEATURES = ("mcp", "a2a", "serve", "postgres", "otel")
EXTRA_MODULES = frozenset({"mcp", "a2a", "starlette", "uvicorn", "psycopg", "opentelemetry"})
"""What ``import agentloom`` and a core run must never import."""

PRELUDE = textwrap.dedent("""
    import json, os, sys

    _BLOCKED = frozenset(json.loads(os.environ["AGENTLOOM_TEST_BLOCKED"]))


    class _NotInstalled:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in _BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None


    sys.meta_path.insert(0, _NotInstalled())
""")
CLI = PRELUDE + "sys.argv[0] = 'agentloom'\nfrom agentloom.cli.main import main\nmain()\n"


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_with(extras: Iterable[str] = ()) -> set[str]:
    """The distributions ``pip install 'agentloom[extras]'`` brings (normalised names)."""
    seen: set[tuple[str, tuple[str, ...]]] = set()
    todo: list[tuple[str, tuple[str, ...]]] = [("agentloom", tuple(sorted(extras)))]
    while todo:
        name, wanted = todo.pop()
        if (name, wanted) in seen:
            continue
        seen.add((name, wanted))
        if name == "agentloom":  # this checkout's pyproject, not a possibly stale install
            specs = [*PROJECT["dependencies"], *(s for e in wanted for s in OPTIONAL[e])]
            markers: list[dict[str, str]] = [{"extra": ""}]
        else:
            try:
                specs = md.requires(name) or []
            except md.PackageNotFoundError:
                continue
            markers = [{"extra": e} for e in ("", *wanted)]
        for requirement in map(Requirement, specs):
            if requirement.marker is None or any(requirement.marker.evaluate(m) for m in markers):
                todo.append((_normal(requirement.name), tuple(sorted(requirement.extras))))
    return {name for name, _ in seen}


def blocked_with(extras: Iterable[str] = ()) -> set[str]:
    """Every top-level module that only distributions outside ``installed_with(extras)``
    provide."""
    present = installed_with(extras)
    return {module for module, dists in md.packages_distributions().items()
            if module not in sys.stdlib_module_names
            and not any(_normal(d) in present for d in dists)}


def _python(code: str, *args: str, extras: Iterable[str] = (), cwd: Path,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, **(env or {}),
               "AGENTLOOM_TEST_BLOCKED": json.dumps(sorted(blocked_with(extras)))}
    environ.pop("AGENTLOOM_STORE", None)
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=120, check=False)


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return _python(CLI, *args, cwd=cwd, env=env)


def _refused(done: subprocess.CompletedProcess[str], extra: str, feature: str) -> None:
    """Exit 2 and one stderr line: the code, the feature and the pip install of ``extra``."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.strip().splitlines() == [
        f"error: EXTRA_MISSING: {feature} needs the '{extra}' extra: "
        f"pip install 'agentloom[{extra}]'"], done.stderr


def _config(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "turns.yaml").write_text("turns:\n  - text: done\n", encoding="utf-8")
    path = folder / "agentloom.yaml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


MCP_HOOK = """\
    version: 1
    mcp_servers:
      policy: {transport: stdio, command: policy-server}
    agents:
      main:
        model: {builtin: script, path: turns.yaml}
        tools: [fs.write]
        hooks:
          - timing: before
            match: {capability: fs.write}
            handler: {kind: mcp, server: policy, tool: check_write}
"""
A2A_AGENT = """\
    version: 1
    a2a_agents:
      billing: {card_url: "http://127.0.0.1:9/.well-known/agent-card.json"}
    agents:
      main:
        model: {builtin: script, path: turns.yaml}
        tools: [a2a.billing]
"""


# -- what each install holds -----------------------------------------------------------------

def test_i35_5_the_core_install_brings_none_of_the_extras() -> None:
    core = installed_with()
    assert not {"mcp", "a2a-sdk", "starlette", "uvicorn", "psycopg", "opentelemetry-sdk",
                "protobuf", "google-auth", "httpx", "cryptography"} & core
    assert {"openai", "typer", "rich", "pydantic", "dulwich", "pyyaml", "httpx2"} <= core
    assert EXTRA_MODULES | {"google", "httpx"} <= blocked_with()


def test_i35_5_each_extra_brings_its_modules() -> None:
    assert set(EXTRAS) == set(FEATURES)
    for extra in FEATURES:
        missing = blocked_with([extra])
        assert not {m.split(".")[0] for m in EXTRAS[extra]} & missing, extra


def test_i35_5_all_lists_every_extra_and_dev_pulls_all() -> None:
    (everything,) = OPTIONAL["all"]
    assert Requirement(everything).name == "agentloom"
    assert Requirement(everything).extras == set(FEATURES)
    assert "agentloom[all]" in OPTIONAL["dev"]
    assert not blocked_with(["all"]) & EXTRA_MODULES


# -- the core without extras -----------------------------------------------------------------

def test_i35_5_import_agentloom_and_the_cli_import_no_extra(tmp_path: Path) -> None:
    done = _python(PRELUDE + textwrap.dedent("""
        import agentloom, agentloom.cli.main, agentloom.host, agentloom.a2a, agentloom.telemetry
        print(json.dumps(sorted({m.partition(".")[0] for m in sys.modules})))
    """), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not set(json.loads(done.stdout)) & (EXTRA_MODULES | {"google", "httpx"})
    helped = _cli("--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert "serve" in helped.stdout and "mcp" in helped.stdout


def test_i35_5_a_core_run_works_without_extras(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    shutil.copytree(ROOT / "examples" / "notes", notes,
                    ignore=shutil.ignore_patterns(".agentloom"))
    done = _cli("run", str(notes / "agentloom.yaml"), "Keep a note", "--json", "--store",
                f"sqlite:///{tmp_path / 'n.db'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert '"status": "succeeded"' in done.stdout
    made = _cli("init", str(tmp_path / "mine"), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    ran = _cli("run", str(tmp_path / "mine" / "agentloom.yaml"), "Do the thing", "--json",
               cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr


def test_i35_5_the_python_api_example_runs_without_extras(tmp_path: Path) -> None:
    done = _python(PRELUDE + "import runpy\nsys.argv = sys.argv[1:]\n"
                   "runpy.run_path(sys.argv[0], run_name='__main__')\n",
                   str(ROOT / "examples" / "python_api.py"), "--store",
                   f"sqlite:///{tmp_path / 'api.db'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "succeeded: hello.txt is written and says hello." in done.stdout


# -- each feature without its extra: the CLI -------------------------------------------------

def test_i35_5_mcp_servers_without_the_mcp_extra_are_refused(tmp_path: Path) -> None:
    config = ROOT / "examples" / "mcp" / "agentloom.yaml"
    _refused(_cli("run", str(config), "x", "--store", f"sqlite:///{tmp_path / 'm.db'}",
                  cwd=tmp_path), "mcp", f"{config}: using MCP servers")
    assert not (tmp_path / "m.db").exists()  # refused before anything is created
    _refused(_cli("mcp", "list", str(config), cwd=tmp_path), "mcp", "agentloom mcp")


def test_i35_5_an_mcp_hook_without_the_mcp_extra_is_refused(tmp_path: Path) -> None:
    config = _config(tmp_path / "hooked", MCP_HOOK)
    _refused(_cli("run", str(config), "x", "--store", f"sqlite:///{tmp_path / 'h.db'}",
                  cwd=tmp_path), "mcp", f"{config}: using MCP servers")


def test_i35_5_a2a_agents_without_the_a2a_extra_are_refused(tmp_path: Path) -> None:
    config = _config(tmp_path / "remote", A2A_AGENT)
    _refused(_cli("run", str(config), "x", "--store", f"sqlite:///{tmp_path / 'a.db'}",
                  cwd=tmp_path), "a2a", f"{config}: calling A2A agents")
    assert not (tmp_path / "a.db").exists()


def test_i35_5_serve_without_the_serve_extra_is_refused(tmp_path: Path) -> None:
    _refused(_cli("serve", str(ROOT / "examples" / "notes" / "agentloom.yaml"), "--store",
                  f"sqlite:///{tmp_path / 's.db'}", cwd=tmp_path), "serve", "agentloom serve")


def test_i35_5_a_postgres_store_without_the_postgres_extra_is_refused(tmp_path: Path) -> None:
    _refused(_cli("run", str(ROOT / "examples" / "notes" / "agentloom.yaml"), "x", "--store",
                  "postgresql://agentloom@127.0.0.1:9/none", cwd=tmp_path),
             "postgres", "a postgresql:// store")


def test_i35_5_tracing_without_the_otel_extra_is_refused(tmp_path: Path) -> None:
    _refused(_cli("run", str(ROOT / "examples" / "notes" / "agentloom.yaml"), "x", "--store",
                  f"sqlite:///{tmp_path / 'o.db'}", cwd=tmp_path,
                  env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}),
             "otel", "tracing (telemetry.enabled or OTEL_EXPORTER_OTLP_ENDPOINT)")


# -- each feature without its extra: Python --------------------------------------------------

def test_i35_5_python_features_without_their_extra_raise_missing_extra(tmp_path: Path) -> None:
    config = _config(tmp_path / "remote", A2A_AGENT)
    done = _python(PRELUDE + textwrap.dedent("""
        import agentloom
        from agentloom.assembly import runtime_from_config
        from agentloom.config import load_config
        from agentloom.extras import MissingExtra
        from agentloom.models.offline import TestModel

        agents = [agentloom.AgentSpec(name="main", model=TestModel())]
        cases = {
            "mcp": lambda: __import__("agentloom.mcp"),
            "a2a": lambda: runtime_from_config(load_config(sys.argv[1]), store="memory://"),
            "postgres": lambda: agentloom.Runtime(agents, store="postgresql://u@127.0.0.1:9/x"),
            "otel": lambda: agentloom.Runtime(agents, store="memory://", telemetry=True),
        }
        said = {}
        for extra, case in cases.items():
            try:
                case()
            except MissingExtra as exc:
                said[extra] = [exc.code, str(exc), isinstance(exc, ImportError)]
        print(json.dumps(said))
    """), str(config), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert set(said) == {"mcp", "a2a", "postgres", "otel"}
    for extra, (code, message, is_import_error) in said.items():
        assert code == "EXTRA_MISSING"
        assert is_import_error
        assert "\n" not in message
        assert message.endswith(f"needs the '{extra}' extra: pip install 'agentloom[{extra}]'")


def test_i35_5_serve_without_the_a2a_extra_answers_its_a2a_paths_naming_it(tmp_path: Path) -> None:
    done = _python(PRELUDE + textwrap.dedent("""
        import asyncio
        import agentloom
        from agentloom.host.app import create_app
        from agentloom.models.offline import TestModel

        app = create_app(agentloom.Runtime([agentloom.AgentSpec(name="main", model=TestModel())],
                                           store="memory://"), execute=False)

        async def get(path):
            sent = []
            scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(),
                     "query_string": b"", "headers": [], "scheme": "http",
                     "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 1), "root_path": "",
                     "http_version": "1.1", "asgi": {"version": "3.0"}}
            async def receive():
                return {"type": "http.request", "body": b"", "more_body": False}
            async def send(message):
                sent.append(message)
            await app(scope, receive, send)
            body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
            return [sent[0]["status"], json.loads(body)]

        async def main():
            return {p: await get(p) for p in ("/.well-known/agent-card.json", "/a2a/jsonrpc",
                                              "/health")}
        print(json.dumps(asyncio.run(main())))
    """), extras=["serve"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout)
    assert answers["/health"] == [200, {"status": "ok"}]
    for path in ("/.well-known/agent-card.json", "/a2a/jsonrpc"):
        status, problem = answers[path]
        assert status == 501
        assert problem["code"] == "EXTRA_MISSING"
        assert problem["detail"] == ("serving agents over A2A needs the 'a2a' extra: "
                                     "pip install 'agentloom[a2a]'")
    assert "serving agents over A2A needs the 'a2a' extra" in done.stderr  # logged at start


@pytest.mark.parametrize("argv", [("--help",), ("mcp", "--help"), ("serve", "--help")])
def test_i35_5_help_needs_no_extra(argv: Sequence[str], tmp_path: Path) -> None:
    done = _cli(*argv, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
