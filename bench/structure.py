"""The structure figures of issue #13, measured on ``src/agentloom``: what a refactor reports
before and after.

    python bench/structure.py            # the figures
    python bench/structure.py --list     # and the places behind each

Figures: package cycles (between the top-level packages of ``agentloom``, from the imports
each module makes, ``TYPE_CHECKING`` ones included), modules over 400 lines,
``dict[str, Any]`` occurrences, public classes without a docstring, and functions with five
or more positional parameters (``self`` / ``cls`` not counted).
"""

from __future__ import annotations

import argparse
import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "src" / "agentloom"
LONG_MODULE = 400
MANY_POSITIONAL = 5


def _package(path: Path) -> str:
    rel = path.relative_to(ROOT)
    return rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 else "(top)"


def _imports(tree: ast.AST, module: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.rsplit(".", node.level)[0]
                name = f"{base}.{node.module}" if node.module else base
            else:
                name = node.module or ""
            found.add(name)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {n for n in found if n == "agentloom" or n.startswith("agentloom.")}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def measure() -> dict[str, list[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    places: dict[str, list[str]] = {"long modules": [], "dict[str, Any]": [],
                                    "public classes without a docstring": [],
                                    "functions with >= 5 positional parameters": []}
    for path in sorted(ROOT.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        rel = str(path.relative_to(ROOT.parent))
        module = "agentloom." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        pkg = _package(path)
        for name in _imports(tree, module):
            parts = name.split(".")
            target = parts[1] if len(parts) > 1 else "(top)"
            if (ROOT / target).is_dir() and target != pkg and pkg != "(top)":
                edges[pkg].add(target)
        lines = text.count("\n") + 1
        if lines > LONG_MODULE:
            places["long modules"].append(f"{rel} ({lines} lines)")
        for number, line in enumerate(text.splitlines(), 1):
            for _ in range(line.count("dict[str, Any]")):
                places["dict[str, Any]"].append(f"{rel}:{number}")
        for node in ast.walk(tree):
            if (isinstance(node, ast.ClassDef) and not node.name.startswith("_")
                    and ast.get_docstring(node) is None):
                places["public classes without a docstring"].append(f"{rel}:{node.lineno} {node.name}")
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                positional = [a.arg for a in [*node.args.posonlyargs, *node.args.args]
                              if a.arg not in ("self", "cls")]
                if len(positional) >= MANY_POSITIONAL:
                    places["functions with >= 5 positional parameters"].append(
                        f"{rel}:{node.lineno} {node.name} ({len(positional)})")
    places["package cycles"] = [" ↔ ".join(c) for c in _cycles(edges)]
    return places


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print the places behind each figure")
    args = parser.parse_args()
    places = measure()
    print(f"structure of {ROOT.relative_to(ROOT.parents[1])}:")
    for name in ("package cycles", "long modules", "dict[str, Any]",
                 "public classes without a docstring",
                 "functions with >= 5 positional parameters"):
        label = f"modules over {LONG_MODULE} lines" if name == "long modules" else name
        print(f"  {label:<45} {len(places[name])}")
        if args.list:
            for place in places[name]:
                print(f"      {place}")


if __name__ == "__main__":
    main()
