"""Issue 35's figures, printed from the tree as it is: the largest modules, ``Runtime``'s line
count, literal table accesses outside ``store/``, and the distributions an install pulls in.

::

    python bench/architecture_figures.py                 # the tree's figures
    python bench/architecture_figures.py --list          # … and every raw table access
    python bench/architecture_figures.py --distributions # … and install counts (needs pip)

A *raw table access* is a call whose first argument is a string literal naming a store table:
``x.get("runs", …)``, ``x.query("runs", …)``, ``Put("runs", …)``, ``Insert(…)``,
``Delete(…)``. The count of installed distributions is read from a fresh virtual environment
per extra (``pip install --dry-run`` would not resolve what an editable install pulls).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "agentloom"
CALLS = frozenset({"get", "query", "Put", "Insert", "Delete", "Update"})


def tables() -> frozenset[str]:
    """Every table the migrations create or rename one to (``events`` became ``run_controls``)."""
    text = "\n".join(p.read_text() for p in (SRC / "store").glob("*.py"))
    return frozenset(re.findall(r"CREATE TABLE(?: IF NOT EXISTS)? (\w+)", text)
                     + re.findall(r"ALTER TABLE \w+ RENAME TO (\w+)", text))


def accesses_in(source: str, known: frozenset[str]) -> list[tuple[int, str, str]]:
    """(line, call, table) of every call in ``source`` whose first argument names a table."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else \
            node.func.id if isinstance(node.func, ast.Name) else None
        first = node.args[0]
        if name in CALLS and isinstance(first, ast.Constant) and first.value in known:
            found.append((node.lineno, name, first.value))
    return sorted(found)


def raw_accesses(known: frozenset[str]) -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if rel.parts[0] != "store":
            found += [f"{rel}:{line} {name}({table!r})"
                      for line, name, table in accesses_in(path.read_text(), known)]
    return found


def class_lines(path: Path, name: str) -> int:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            assert node.end_lineno is not None
            return node.end_lineno - node.lineno + 1
    return 0


def distributions(extra: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip"]
        spec = f"{ROOT}[{extra}]" if extra else str(ROOT)
        subprocess.run([*pip, "install", "-q", spec], check=True, capture_output=True)
        listed = subprocess.run([*pip, "list", "--format=freeze"], check=True,
                                capture_output=True, text=True).stdout.split()
        return len([d for d in listed if not d.lower().startswith(("pip==", "setuptools=="))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--list", action="store_true", help="list every raw table access")
    parser.add_argument("--distributions", nargs="*", metavar="EXTRA",
                        help="count installed distributions for these extras ('' = core)")
    args = parser.parse_args()
    sizes = sorted(((len(p.read_text().splitlines()), p.relative_to(SRC))
                    for p in SRC.rglob("*.py")), reverse=True)
    print("largest modules (lines):")
    for lines, rel in sizes[:5]:
        print(f"  {lines:5d}  {rel}")
    runtime = next((p for p in (SRC / "agent").glob("runtime*.py")), SRC / "agent" / "runtime.py")
    print(f"class Runtime: {class_lines(runtime, 'Runtime')} lines ({runtime.relative_to(SRC)})")
    found = raw_accesses(tables())
    packages: dict[str, int] = {}
    for f in found:
        top = f.split("/")[0].split(":")[0]
        packages[top] = packages.get(top, 0) + 1
    print(f"raw table accesses outside store/: {len(found)} "
          f"({', '.join(f'{k} {v}' for k, v in sorted(packages.items()))})")
    if args.list:
        for f in found:
            print(f"  {f}")
    if args.distributions is not None:
        for extra in args.distributions or [""]:
            print(f"installed distributions, agentloom[{extra}]: {distributions(extra)}")


if __name__ == "__main__":
    main()
