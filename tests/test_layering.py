"""DESIGN.md §2: dependencies point down only. Checked from the import statements of src/."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "agentloom"

# Ports a layer *implements* may be imported from below: a port is a Protocol beside its
# consumer, and an adapter imports the port it implements (DESIGN.md §2).
PORTS = {"pipeline.ports", "pipeline.cancel"}

# package -> packages it must never import
FORBIDDEN: dict[str, set[str]] = {
    "store": {"bus", "pipeline", "hooks", "context", "tools", "catalog", "kernel", "agent"},
    "catalog": {"bus", "pipeline", "hooks", "context", "store", "tools", "kernel", "agent"},
    "hooks": {"bus", "pipeline", "context", "store", "tools", "kernel", "agent"},
    "context": {"bus", "pipeline", "kernel", "agent", "tools"},
    "pipeline": {"bus", "kernel", "agent", "tools"},
    "bus": {"kernel", "agent", "tools"},
    "tools": {"bus", "pipeline", "kernel", "agent", "context", "hooks", "store"},
    "errors": {"*"},
    "ids": {"*"},
    "text": {"*"},
    "folders": {"*"},
    "results": {"bus", "pipeline", "hooks", "context", "store", "tools", "catalog", "kernel"},
    "refs": {"*"},
    "canonical": {"*"},
    "yamlfile": {"*"},
    "workspace": {"bus", "pipeline", "kernel", "agent", "hooks", "context", "tools", "sandbox"},
    "models": {"bus", "pipeline", "kernel", "agent", "hooks", "context", "tools", "workspace",
               "sandbox", "store"},
    "sandbox": {"bus", "pipeline", "kernel", "agent", "hooks", "context", "tools", "workspace",
                "store", "cli", "config"},
    "config": {"bus", "kernel", "environment", "agent", "cli", "context", "store", "sandbox",
               "workspace"},
    "agent": {"cli"},
}


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "agentloom" and len(parts) > 1:
                if ".".join(parts[1:3]) in PORTS:
                    continue
                found.add(parts[1])
    return found


def test_dependencies_point_down_only() -> None:
    violations = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        package = rel.parts[0].removesuffix(".py")
        forbidden = FORBIDDEN.get(package)
        if not forbidden:
            continue
        for imported in imported_packages(path) - {package}:
            if "*" in forbidden or imported in forbidden:
                violations.append(f"{rel} imports agentloom.{imported}")
    assert violations == []
