"""DESIGN.md §2: dependencies point down only, and no two packages depend on each other.

Checked from every import statement of ``src/agentloom`` — inside functions and under
``TYPE_CHECKING`` too. A *unit* is a top-level package (``pipeline``) or module (``kernel``)
of ``agentloom``; ``LAYERS`` ranks every unit, top to bottom, and a unit may import its own
layer or any layer below. Where DESIGN's diagram leaves a unit out, it sits here:

- ``__init__`` (the Python API), ``__main__`` and ``host`` (the HTTP host) sit with ``cli``:
  entry points, nothing below imports them. ``testing`` sits there too: its harnesses drive a
  whole ``Kernel``.
- ``kernel`` and ``environment`` are the composition root (store → coordinator → pipeline →
  bus; workspaces, file tools, exec), between ``agent`` and ``bus``.
- ``store`` sits below the domain managers, just above the core: it imports only the core
  ("``store/`` knows no domain manager"), and ``workspace`` keeps its scopes in it. The
  CommitCoordinator that the diagram draws beside the store lives in ``pipeline``.
- ``intent`` is a pure library (DESIGN §2: it imports nothing but the core): it sits just above
  the core, and ``test_13_6_pure_libraries_import_only_the_core`` pins that it imports nothing
  else — its model call is a port (``intent.ports.Proposer``) implemented in ``agent``.
  ``command`` is one too, beside it (neither imports the other: admission reads a recognition
  through a Protocol); its execution and receipts are ports (``command.ports``) implemented in
  ``agent``.
- ``approvals`` (a person's answer to a call a hook asked about) sits with ``pipeline``, which
  raises its ``ApprovalPending`` and reads its answers on replay.
- ``cancel`` (``CancelToken``) and ``attempts`` (``CapabilityRequest``, ``AttemptContext``:
  what a handler is handed) are core, so handlers below the pipeline need not import it;
  ``canonical``, ``yamlfile``, ``limits`` (the window / output-limit rule), ``refs``, ``text``,
  ``secret_refs`` (``${VAR}`` in configured values) and ``folders`` are core helpers.
  ``telemetry`` (OpenTelemetry spans and trace context) is core too: the pipeline, the HTTP
  hook runner and the MCP client all call it, and it sees them only through its own ports.

The one exception DESIGN allows is a port: a Protocol beside its consumer may be imported
from below by the code that implements it (``PORTS``); the port module itself must then
import nothing above its importer. The other is a deprecated import path (``SHIMS``): a module
kept where docs once showed it, holding nothing but a module ``__getattr__`` that imports each
name lazily from the one module it may import (issue #35: ``agent.configured`` ->
``assembly``). A new unit fails the test until it is given a layer.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "agentloom"

LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"cli", "__main__", "__init__", "testing", "host"}),
    frozenset({"assembly"}),
    frozenset({"views"}),
    frozenset({"squad"}),
    frozenset({"agent"}),
    frozenset({"kernel", "environment"}),
    frozenset({"bus"}),
    frozenset({"pipeline", "approvals"}),
    frozenset({"hooks", "context"}),
    frozenset({"models", "tools", "workspace", "sandbox", "mcp", "a2a", "skills"}),
    frozenset({"store"}),
    frozenset({"intent", "command"}),
    frozenset({"errors", "ids", "results", "config", "catalog", "canonical", "yamlfile", "cancel",
               "attempts", "refs", "text", "folders", "limits", "telemetry", "secret_refs",
               "extras"}),
)
"""Top to bottom (DESIGN.md §2): entry points; agent; composition root; bus; pipeline;
hooks / context; domain managers; store; pure libraries (intent, command); core. ``squad``
(workflows, issue 20) sits above ``agent``: a workflow drives agents, never the other way."""

PORTS: Mapping[str, frozenset[str]] = {
    # The ToolManager and ModelManager are the owners the bus routes tool and model calls to:
    # each hands the pipeline a CapabilityHandler, the port pipeline/ports.py declares.
    # The MCP tool handler (mcp/handler.py) implements it too, and the A2A send handler
    # (a2a/handler.py) its ResumableHandler.
    "agentloom.pipeline.ports": frozenset({"models", "tools", "mcp", "a2a"}),
}
"""Port module -> the units below it that may import it (the ones that implement it)."""

SHIMS: Mapping[str, str] = {
    # issue #35 item 1: building a Runtime from a Config moved up to ``assembly``; these paths
    # are in docs (python.md, cli.md, config.md, workflows.md, upgrading.md) and stay importable.
    "agentloom.agent.configured": "agentloom.assembly",
    "agentloom.agent.config_parts": "agentloom.assembly",
    "agentloom.squad.configured": "agentloom.assembly",
}
"""Deprecated module -> the one module above it that it may import, lazily, in its module
``__getattr__`` (each name re-exported with a ``DeprecationWarning``). That it holds nothing
else is pinned by ``test_i35_1_each_shim_is_only_a_lazy_re_export``."""


@dataclass(frozen=True, slots=True)
class Import:
    """One import statement of one module: who imports which ``agentloom`` module."""

    where: str  # "pipeline/chain.py:27"
    importer: str  # the importing module, e.g. "agentloom.pipeline.chain"
    unit: str  # the importing unit
    module: str  # the imported module, e.g. "agentloom.pipeline.ports"

    @property
    def target(self) -> str:
        parts = self.module.split(".")
        return parts[1] if len(parts) > 1 else "__init__"


def unit_of(path: Path, root: Path = SRC) -> str:
    rel = path.relative_to(root)
    return rel.parts[0].removesuffix(".py")


def module_name(path: Path, root: Path = SRC) -> str:
    parts = ["agentloom", *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path = SRC) -> list[Import]:
    """Every ``agentloom`` import in ``path``, wherever it stands (function, TYPE_CHECKING)."""
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    where = str(path.relative_to(root))
    units = {unit_of(p, root) for p in root.iterdir() if p.suffix == ".py" or p.is_dir()}
    found: list[Import] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{up}.{node.module}" if node.module else up
            names = [base]
            if base == "agentloom":  # `from agentloom import pipeline` imports that unit
                names = [f"agentloom.{a.name}" if a.name in units else base for a in node.names]
        else:
            names = [a.name for a in node.names]
        found += [Import(f"{where}:{node.lineno}", module, unit_of(path, root), n) for n in names
                  if n == "agentloom" or n.startswith("agentloom.")]
    return found


def src_imports(root: Path = SRC) -> list[Import]:
    return [i for path in sorted(root.rglob("*.py")) for i in imports_of(path, root)]


def rank(layers: Sequence[frozenset[str]]) -> dict[str, int]:
    return {unit: i for i, layer in enumerate(layers) for unit in layer}


def unranked(units: Iterable[str], layers: Sequence[frozenset[str]]) -> list[str]:
    """Units no layer holds."""
    ranked = rank(layers)
    return sorted({u for u in units if u not in ranked})


def upward_imports(
    imports: Iterable[Import], layers: Sequence[frozenset[str]],
    ports: Mapping[str, frozenset[str]] = PORTS, shims: Mapping[str, str] = SHIMS,
) -> list[str]:
    """Each import of a unit in a higher layer than the importer's (or of a unit no layer
    holds), unless it is a port its importer may use and that port itself imports nothing
    above the importer — not even from its own package — or the importer is a shim importing
    exactly the module ``shims`` names for it."""
    ranked = rank(layers)
    imports = list(imports)
    by_importer: dict[str, list[Import]] = {}
    for i in imports:
        by_importer.setdefault(i.importer, []).append(i)
    found: list[str] = []
    for i in imports:
        if i.unit not in ranked or i.target not in ranked:
            found.append(f"{i.where} imports {i.module} (no layer holds {i.unit} or {i.target})")
        elif i.target == i.unit or ranked[i.target] >= ranked[i.unit] or shims.get(i.importer) == i.module:
            continue
        elif i.unit in ports.get(i.module, frozenset()):
            found += [f"{i.where} imports port {i.module}, which imports {p.module} ({p.where})"
                      for p in by_importer.get(i.module, []) if ranked.get(p.target, -1) < ranked[i.unit]]
        else:
            found.append(f"{i.where} imports {i.module} ({i.unit} is below {i.target})")
    return found


def unit_graph(imports: Iterable[Import]) -> dict[str, set[str]]:
    """Unit -> the other units it imports."""
    graph: dict[str, set[str]] = {}
    for i in imports:
        graph.setdefault(i.unit, set())
        if i.target != i.unit:
            graph[i.unit].add(i.target)
            graph.setdefault(i.target, set())
    return graph


def package_cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one unit (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(cycles)


# -- the contract, on src/agentloom --------------------------------------------------------------


def test_13_6_every_unit_has_a_layer() -> None:
    units = {unit_of(p) for p in SRC.rglob("*.py")}
    assert unranked(units, LAYERS) == []
    assert sum(len(layer) for layer in LAYERS) == len(rank(LAYERS)), "a unit is in two layers"


def test_13_6_dependencies_point_down() -> None:
    assert upward_imports(src_imports(), LAYERS) == []


def test_13_6_no_package_cycle() -> None:
    # a shim's lazy import of its target is the one edge back up (SHIMS), not a dependency
    assert package_cycles(unit_graph(i for i in src_imports() if SHIMS.get(i.importer) != i.module)) == []


def test_13_6_config_imports_nothing_above_the_core() -> None:
    core = LAYERS[-1]
    assert [f"{i.where} imports {i.module}" for i in src_imports()
            if i.unit == "config" and i.target not in core] == []


PURE_LIBRARIES = frozenset({"intent", "command"})
"""Units that import the core and nothing else (DESIGN §2)."""


def test_13_6_pure_libraries_import_only_the_core() -> None:
    core = LAYERS[-1]
    assert [f"{i.where} imports {i.module}" for i in src_imports()
            if i.unit in PURE_LIBRARIES and i.target not in core and i.target != i.unit] == []


# -- the checker can fail ------------------------------------------------------------------------

_SYNTHETIC_LAYERS = (frozenset({"agent"}), frozenset({"pipeline"}), frozenset({"tools", "workspace"}),
                     frozenset({"errors"}))


def _imp(unit: str, module: str, source: str = "") -> Import:
    """An import by ``source`` (default ``<unit>/x.py``), a module of ``unit``."""
    source = source or f"{unit}/x.py"
    return Import(f"{source}:1", "agentloom." + source.removesuffix(".py").replace("/", "."), unit, module)


def test_13_6_checker_reports_a_cycle() -> None:
    graph = unit_graph([_imp("pipeline", "agentloom.tools.sdk"), _imp("tools", "agentloom.workspace"),
                        _imp("workspace", "agentloom.pipeline.ports"), _imp("agent", "agentloom.tools"),
                        _imp("tools", "agentloom.errors")])
    assert package_cycles(graph) == [["pipeline", "tools", "workspace"]]
    assert package_cycles({"a": {"b"}, "b": set()}) == []


def test_13_6_checker_reports_an_upward_import() -> None:
    found = upward_imports([_imp("workspace", "agentloom.pipeline.records"),
                            _imp("agent", "agentloom.pipeline"), _imp("tools", "agentloom.workspace"),
                            _imp("errors", "agentloom.errors")], _SYNTHETIC_LAYERS, ports={})
    assert found == ["workspace/x.py:1 imports agentloom.pipeline.records (workspace is below pipeline)"]


def test_13_6_checker_allows_a_port_only_to_its_implementers_and_only_if_the_port_points_down() -> None:
    port = "agentloom.pipeline.ports"
    ports = {port: frozenset({"tools"})}
    clean = [_imp("tools", port), _imp("pipeline", "agentloom.errors", "pipeline/ports.py")]
    assert upward_imports(clean, _SYNTHETIC_LAYERS, ports) == []
    assert upward_imports([*clean, _imp("workspace", port)], _SYNTHETIC_LAYERS, ports) == [
        f"workspace/x.py:1 imports {port} (workspace is below pipeline)"]
    leaky = [*clean, _imp("pipeline", "agentloom.pipeline.records", "pipeline/ports.py"),
             _imp("pipeline", "agentloom.agent", "pipeline/ports.py")]
    assert sorted(upward_imports(leaky, _SYNTHETIC_LAYERS, ports)) == [
        "pipeline/ports.py:1 imports agentloom.agent (pipeline is below agent)",
        f"tools/x.py:1 imports port {port}, which imports agentloom.agent (pipeline/ports.py:1)",
        f"tools/x.py:1 imports port {port}, which imports agentloom.pipeline.records (pipeline/ports.py:1)"]


def test_13_6_checker_reports_a_unit_without_a_layer() -> None:
    assert unranked({"agent", "squad", "errors"}, _SYNTHETIC_LAYERS) == ["squad"]


def test_13_6_imports_are_read_from_functions_type_checking_and_relative_forms(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "x.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import sdk\n"
        "from ..pipeline import records\n"
        "if TYPE_CHECKING:\n    from agentloom.agent.runtime import Runtime\n"
        "def f():\n    import agentloom.bus\n", encoding="utf-8")
    found = imports_of(tmp_path / "tools" / "x.py", tmp_path)
    assert sorted((i.module, i.target) for i in found) == [
        ("agentloom.agent.runtime", "agent"), ("agentloom.bus", "bus"),
        ("agentloom.pipeline", "pipeline"), ("agentloom.tools", "tools")]


# -- deprecated import paths (issue #35 item 1) --------------------------------------------------


def _shim_file(module: str) -> Path:
    return SRC.joinpath(*module.split(".")[1:]).with_suffix(".py")


def test_i35_1_each_shim_is_only_a_lazy_re_export() -> None:
    """A shim is a docstring, ``typing`` / ``__future__`` imports and one module
    ``__getattr__`` that imports its one target inside it and warns ``DeprecationWarning``."""
    assert SHIMS, "no shim listed"
    for module, target in SHIMS.items():
        path = _shim_file(module)
        docstring, *rest = ast.parse(path.read_text(encoding="utf-8")).body
        assert isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant) \
            and isinstance(docstring.value.value, str), f"{module}: no docstring first"
        functions = [n for n in rest if isinstance(n, ast.FunctionDef)]
        others = [n for n in rest if n not in functions and not (
            isinstance(n, ast.ImportFrom) and n.module in ("typing", "__future__"))]
        assert others == [], f"{module} holds more than a lazy re-export (line {others[0].lineno})"
        assert [f.name for f in functions] == ["__getattr__"], module
        assert {i.module for i in imports_of(path)} == {target}, module
        assert "DeprecationWarning" in {n.id for n in ast.walk(functions[0]) if isinstance(n, ast.Name)}


def test_i35_1_checker_allows_a_shim_its_one_import_and_nothing_else() -> None:
    shims = {"agentloom.workspace.old": "agentloom.pipeline"}
    shim = _imp("workspace", "agentloom.pipeline", "workspace/old.py")
    assert upward_imports([shim], _SYNTHETIC_LAYERS, ports={}, shims=shims) == []
    others = [_imp("workspace", "agentloom.pipeline"),  # not a shim
              _imp("workspace", "agentloom.pipeline.records", "workspace/old.py")]  # not its target
    assert upward_imports([shim, *others], _SYNTHETIC_LAYERS, ports={}, shims=shims) == [
        "workspace/x.py:1 imports agentloom.pipeline (workspace is below pipeline)",
        "workspace/old.py:1 imports agentloom.pipeline.records (workspace is below pipeline)"]
