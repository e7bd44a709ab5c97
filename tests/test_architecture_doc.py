"""Issue #35 item 7 (a true map): docs/architecture.md's layer diagram names every unit of the
layering test's ``LAYERS``, each at its own layer, and nothing the package does not have — a
new package fails here until the page names it, as it fails the layering test until it has a
layer."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_layering import LAYERS

PAGE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
NAMED = re.compile(r"(?<![\w/.])([a-z_][a-z0-9_]*)(?:/|\.py)(?![\w/])")  # "squad/", "kernel.py"
ENTRY = {"__init__"}  # the Python API: written as agentloom/__init__.py


def diagram_layers(text: str) -> list[set[str]]:
    """The units each ``layer N`` of the first diagram after "## The layers" names: packages
    as ``name/``, modules as ``name.py``, and the core's bare names on its own line."""
    block = text.split("## The layers", 1)[1].split("```", 2)[1]
    layers: list[set[str]] = []
    core = False
    for line in block.splitlines():
        head = re.match(r"\s*layer (\d+)\s", line)
        if head:
            assert int(head.group(1)) == len(layers) + 1, f"layers out of order at {line!r}"
            layers.append(set())
            core = "core:" in line
        if not layers:
            continue
        layers[-1] |= set(NAMED.findall(line))
        if core:  # "core:  errors  ids  results …": bare names
            words = line.split("core:", 1)[1] if "core:" in line else line
            layers[-1] |= set(re.findall(r"[a-z_][a-z0-9_]*", words))
    return layers


def test_i35_7_the_architecture_page_names_every_unit_at_its_layer() -> None:
    layers = diagram_layers(PAGE.read_text(encoding="utf-8"))
    assert len(layers) == len(LAYERS)
    for number, (drawn, ranked) in enumerate(zip(layers, LAYERS, strict=True), start=1):
        expected = set(ranked) - ENTRY
        assert drawn - {"agentloom"} == expected, (
            f"layer {number}: the page names {sorted(drawn - {'agentloom'})}, "
            f"tests/test_layering.py ranks {sorted(expected)}")


def test_i35_7_the_check_sees_a_missing_and_a_misplaced_unit() -> None:
    page = PAGE.read_text(encoding="utf-8")
    layers = diagram_layers(page.replace("  squad/  (workflows", "  (workflows"))
    assert "squad" not in set().union(*layers)
    moved = diagram_layers(page.replace("approvals/  a call", "a call").replace(
        "  bus/  EventBus", "  bus/  approvals/  EventBus"))
    assert "approvals" in moved[6] and "approvals" not in moved[7]


ROOT = PAGE.parents[1]


def named_paths(section: str) -> list[str]:
    """The files and folders a section names in backticks (``store/url.py``, ``host/``,
    ``tests/test_layering.py``); names with a placeholder (``<kind>``) are left out."""
    tokens = re.findall(r"`([^`\s]+)`", section)
    return [t for t in tokens if ("/" in t or t.endswith(".py")) and "<" not in t
            and not t.startswith(("agentloom.", "http"))]


def exists(name: str) -> bool:
    """Whether ``name`` (a glob) is a file or folder of the package or of the repository."""
    return any(list(base.glob(name.rstrip("/"))) for base in (ROOT / "src" / "agentloom", ROOT))


def test_i35_7_where_a_change_goes_names_only_files_that_exist() -> None:
    page = PAGE.read_text(encoding="utf-8")
    section = page.split("Three seams keep the layers honest", 1)[1].split("## The life of", 1)[0]
    assert "## Where a change goes" in section
    for change in ("a hook handler kind", "a store backend", "a model wire protocol",
                   "a protocol binding", "a CLI command", "a config section"):
        assert f"| {change}" in section, change
    named = named_paths(section)
    assert len(named) > 30
    folder = ""  # "store/runs.py, `approvals.py`": a bare name is beside the path before it
    missing = []
    for name in named:
        if exists(name):
            folder = name.rsplit("/", 1)[0] if "/" in name else folder
        elif not (folder and exists(f"{folder}/{name}")):
            missing.append(name)
    assert missing == [], f"docs/architecture.md names files that do not exist: {missing}"


def test_i35_7_the_file_check_sees_a_file_that_does_not_exist() -> None:
    assert exists("store/url.py") and exists("host/routes_*.py") and exists("docs/hooks.md")
    assert not exists("store/oracle.py")
    assert named_paths("`store/oracle.py`, `hooks/handlers/<kind>.py`, `x`") == ["store/oracle.py"]
