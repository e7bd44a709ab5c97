"""Issue #35 items 5 and 8: every distribution ``src/agentloom`` imports is declared in
pyproject.toml, not merely installed because something else pulled it in — a dependency that
drops it must not break ``import agentloom``.

Where it is declared follows where it is imported (item 5): a module the core imports is in
``dependencies``; one imported only behind an extra may be declared in that extra instead.
Code is behind an extra when it lives in a package that needs it (``BEHIND``), or when the
module it imports is the extra's own (``agentloom.extras.EXTRAS``: ``import uvicorn`` in
``cli/serve.py`` is behind ``serve``, and such an import must be lazy — tests/test_i35_5_extras.py
runs the core without the extras)."""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
import tomllib
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

from agentloom.extras import EXTRAS

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "agentloom"
# the sandbox's helper scripts import each other by bare name when run as files
LOCAL = {"agentloom", "_kernel", "_reaper", "_view"}

BEHIND: Mapping[str, frozenset[str]] = {
    "mcp/": frozenset({"mcp"}),          # the MCP client: only for a config naming MCP servers
    "a2a/": frozenset({"a2a"}),          # the A2A client: only for a config naming A2A agents
    "host/a2a/": frozenset({"a2a", "serve"}),  # the A2A server, in the host's app
    "host/": frozenset({"serve"}),       # the HTTP host (agentloom serve)
}
"""Folder of ``src/agentloom`` -> the extras its code may rely on (the longest folder wins)."""


def imports_by_file() -> dict[str, set[str]]:
    """Every third-party top-level module each file of ``src/agentloom`` imports."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in SRC.rglob("*.py"):
        where = path.relative_to(SRC).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found[where] |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found[where].add(node.module.split(".")[0])
        found[where] -= set(sys.stdlib_module_names) | LOCAL
    return found


def project() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _names(specs: list[str]) -> set[str]:
    return {_normal(re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0]) for spec in specs}


def declared() -> dict[str, set[str]]:
    """``""`` (the core) and each extra -> the distributions it names."""
    extras = project().get("optional-dependencies", {})
    assert isinstance(extras, dict)
    core = project()["dependencies"]
    assert isinstance(core, list)
    return {"": _names(core), **{extra: _names(specs) for extra, specs in extras.items()}}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def extras_of(where: str, module: str) -> set[str]:
    """The extras whose declarations satisfy ``where`` importing ``module``: the core always."""
    folders = [folder for folder in BEHIND if where.startswith(folder)]
    behind = set(BEHIND[max(folders, key=len)]) if folders else set()
    return {"", *behind, *(e for e, mods in EXTRAS.items() if module in {m.split(".")[0] for m in mods})}


def test_i35_8_every_imported_distribution_is_declared() -> None:
    providers = md.packages_distributions()
    names = set().union(*declared().values())
    undeclared = {module: providers.get(module, ["(not installed)"])
                  for module in sorted(set().union(*imports_by_file().values()))
                  if not any(_normal(d) in names for d in providers.get(module, []))}
    assert undeclared == {}


def test_i35_5_a_distribution_is_declared_where_its_importer_runs() -> None:
    """Core code's imports are core dependencies; an extra's code may use the extra's."""
    providers = md.packages_distributions()
    by = declared()
    misplaced = {f"{where}: {module}": sorted(providers.get(module, []))
                 for where, modules in sorted(imports_by_file().items()) for module in sorted(modules)
                 if not any(_normal(d) in by.get(extra, set())
                            for d in providers.get(module, []) for extra in extras_of(where, module))}
    assert misplaced == {}


def test_i35_5_every_folder_behind_an_extra_names_a_declared_extra() -> None:
    extras = set(declared()) - {""}
    assert set().union(*BEHIND.values()) <= extras
    assert set(EXTRAS) <= extras
    assert all((SRC / folder).is_dir() for folder in BEHIND)
