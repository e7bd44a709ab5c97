"""Issue #35 item 8: every distribution ``src/agentloom`` imports is declared in
pyproject.toml (in ``dependencies`` or an extra), not merely installed because something else
pulled it in — a dependency that drops it must not break ``import agentloom``."""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "agentloom"
# the sandbox's helper scripts import each other by bare name when run as files
LOCAL = {"agentloom", "_kernel", "_reaper", "_view"}


def imported_top_levels() -> set[str]:
    found: set[str] = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - LOCAL


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    specs = [*project["dependencies"],
             *(d for extra in project.get("optional-dependencies", {}).values() for d in extra)]
    return {_normal(re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0]) for spec in specs}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_i35_8_every_imported_distribution_is_declared() -> None:
    providers = md.packages_distributions()
    names = declared()
    undeclared = {module: providers.get(module, ["(not installed)"])
                  for module in sorted(imported_top_levels())
                  if not any(_normal(d) in names for d in providers.get(module, []))}
    assert undeclared == {}
