"""Issue #34 (LOW): building a configuration of many agents does per-schema work once, not per
agent. The agents share their tools' schemas (and every model connection has the same payload
schema), so the build compiles each distinct schema once, generates each SDK tool's schema
once, and the validators runs use are built once per distinct schema. The figures (seconds
for 100 / 1,000 agents) are printed by ``bench/many_agents.py``; this test counts the work."""

from __future__ import annotations

import importlib
import sys
import uuid
from collections import Counter, OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.bench.loader import load_bench

from agentloom.assembly import runtime_from_config
from agentloom.canonical import canonical_json
from agentloom.catalog import registry
from agentloom.config import load_config

AGENTS = 1000

# the three SDK tools the bench's agents share (bench/many_agents.py prints the figures)
TOOLS_MODULE: str = load_bench("many_agents.py").TOOLS_MODULE


@pytest.fixture
def module_name() -> Iterator[str]:
    """A fresh module name for the tools written beside the config; dropped from sys.modules
    after."""
    name = f"cfg_i34_{uuid.uuid4().hex[:10]}"
    yield name
    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[loaded]


class Counted:
    """Wraps a function, keeping the positional arguments of each call."""

    def __init__(self, function: Any) -> None:
        self.function = function
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(args)
        return self.function(*args, **kwargs)


async def test_i34_building_many_agents_compiles_each_schema_once(
        tmp_path: Path, module_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / f"{module_name}.py").write_text(TOOLS_MODULE)
    tools = ", ".join(f"{module_name}:{t}" for t in ("echo", "add", "note"))
    lines = ["version: 1", "agents:"]
    for i in range(AGENTS):
        lines += [f"  a{i}:", "    model: {builtin: test}", f"    tools: [{tools}, fs.read]"]
    (tmp_path / "agentloom.yaml").write_text("\n".join(lines) + "\n")
    config = load_config(tmp_path / "agentloom.yaml")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(module_name)  # the one the build imports: its folder's
    generated: list[Counted] = []
    for tool in (module.echo, module.add, module.note):  # each SDK tool's schema, from its model
        made = Counted(tool.input_type.model_json_schema)
        monkeypatch.setattr(tool.input_type, "model_json_schema", made)
        generated.append(made)
    # nothing compiled by an earlier test in this process: every compile this build needs counts
    monkeypatch.setattr(registry, "_compiled_schemas", OrderedDict())
    compiles = Counted(registry.compile_schema)
    monkeypatch.setattr(registry, "compile_schema", compiles)
    validators = Counted(registry.ArgumentValidator)
    monkeypatch.setattr(registry, "ArgumentValidator", validators)

    runtime = runtime_from_config(config, store="memory://")
    try:
        reg, release = runtime.kernel.registry, runtime.release_id
        catalogs = {name: reg.for_role(release, name) for name in config.agents}
        published = {s.capability_key: s for c in catalogs.values() for s in c.specs.values()}
        schemas = {canonical_json([s.schema_origin, dict(schema)]) for s in published.values()
                   for schema in (s.input_schema, s.output_schema) if schema is not None}
        # 1,000 agents' specs: three SDK tools, fs.read, result.read, 1,000 model connections
        assert len(published) == AGENTS + 5
        assert len(schemas) <= 6  # ... and a handful of distinct schemas among them
        assert 0 < len(compiles.calls) <= len(schemas)
        assert max(Counter(canonical_json(c[0]) for c in compiles.calls).values()) == 1
        assert [len(m.calls) for m in generated] == [1, 1, 1]  # not once per agent
        for name, catalog in catalogs.items():  # what each agent's model and tool calls check
            reg.validator(catalog, f"model.{name}")
            reg.validator(catalog, "echo")
        assert len(validators.calls) == 2  # one per distinct schema, shared by every agent
    finally:
        await runtime.aclose()
