"""Issue #35 item 2: ``Runtime`` is a facade over collaborators that each own one job, and its
settings are one frozen ``RuntimeOptions``; the keywords of ``Runtime`` stay, as shorthand.

A keyword given overrides that field of ``options``; ``recovery`` / ``workers`` given as
``None`` are their defaults (as before); the keywords and the fields are the same names, so
they cannot drift apart. The figures the issue sets (``Runtime``'s class ≤ 300 lines, its
collaborators under ~400) are read by ``bench/architecture_figures.py``'s own scanner.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest
from tests.bench.loader import load_bench

import agentloom
from agentloom.agent import AgentSpec, RecoveryPolicy, Runtime, RuntimeOptions
from agentloom.agent.leases import WorkerSettings
from agentloom.models.offline import Script, ScriptModel

ROOT = Path(__file__).resolve().parents[2]
architecture_figures = load_bench("architecture_figures.py")  # bench/ stays off sys.path

AGENT = ROOT / "src" / "agentloom" / "agent"
COLLABORATORS = ("runtime", "options", "handles", "roster", "release", "starts", "claims",
                 "driver", "endings", "control")


def _agent(text: str = "done") -> AgentSpec:
    model = ScriptModel(Script.model_validate({"turns": [{"text": text}]}), source="facade")
    return AgentSpec(name="main", model=model)


def test_i35_2_runtime_options_is_exported_beside_runtime() -> None:
    assert agentloom.RuntimeOptions is RuntimeOptions
    assert "RuntimeOptions" in agentloom.__all__


def test_i35_2_runtime_options_is_a_frozen_keyword_only_value() -> None:
    options = RuntimeOptions(store="memory://")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.store = "sqlite:///x.db"  # type: ignore[misc]
    with pytest.raises(TypeError):
        RuntimeOptions("memory://")  # type: ignore[misc]
    assert RuntimeOptions().recovery == RecoveryPolicy()
    assert RuntimeOptions().workers == WorkerSettings()
    assert RuntimeOptions().store == "sqlite:///.agentloom/agentloom.db"


def test_i35_2_the_keywords_of_runtime_are_the_fields_of_its_options() -> None:
    keywords = [p for p in inspect.signature(Runtime).parameters
                if p not in ("agents", "options")]
    assert keywords == [f.name for f in dataclasses.fields(RuntimeOptions)]


async def test_i35_2_keywords_are_shorthand_for_the_same_options(tmp_path: Path) -> None:
    by_keyword = Runtime([_agent()], store="memory://", workspace_root=tmp_path / "a",
                         space_id="team")
    by_options = Runtime([_agent()], options=RuntimeOptions(
        store="memory://", workspace_root=tmp_path / "a", space_id="team"))
    try:
        assert by_keyword.options == by_options.options
        assert by_keyword.release_id == by_options.release_id
        assert by_keyword.space_id == by_options.space_id == "team"
    finally:
        await by_keyword.aclose()
        await by_options.aclose()


async def test_i35_2_a_keyword_given_overrides_that_field_of_options(tmp_path: Path) -> None:
    base = RuntimeOptions(store="sqlite:///never/used.db", space_id="a", keep_workspaces=True,
                          workspace_root=tmp_path)
    rt = Runtime([_agent()], options=base, store="memory://", space_id="b",
                 recovery=None, workers=None)
    try:
        assert rt.options == dataclasses.replace(base, store="memory://", space_id="b")
        assert (rt.space_id, rt.keep_workspaces) == ("b", True)
        assert rt.recovery == RecoveryPolicy() and rt.workers == WorkerSettings()
    finally:
        await rt.aclose()


async def test_i35_2_a_runtime_built_from_options_runs(tmp_path: Path) -> None:
    rt = Runtime([_agent("built from options")], options=RuntimeOptions(
        store=f"sqlite:///{tmp_path / 'agentloom.db'}", workspace_root=tmp_path / "ws",
        keep_workspaces=True))
    try:
        async with asyncio.timeout(60):
            result = await rt.run("say it")
        assert (result.status, result.output) == ("succeeded", "built from options")
        assert result.workspace is not None  # keep_workspaces came through the options
        assert [r["run_id"] for r in rt.runs()] == [result.run_id]
    finally:
        await rt.aclose()


def test_i35_2_runtime_is_a_facade_of_at_most_300_lines() -> None:
    lines = architecture_figures.class_lines(AGENT / "runtime.py", "Runtime")
    assert 0 < lines <= 300, f"class Runtime has {lines} lines"


@pytest.mark.parametrize("module", COLLABORATORS)
def test_i35_2_each_collaborator_of_runtime_stays_small(module: str) -> None:
    lines = len((AGENT / f"{module}.py").read_text().splitlines())
    assert lines <= 400, f"agent/{module}.py has {lines} lines"


def test_i35_2_names_imported_from_agent_runtime_stay_importable() -> None:
    from agentloom.agent import runtime

    names: dict[str, Any] = {n: getattr(runtime, n) for n in runtime.__all__}
    assert {"RunError", "RunHandle", "RunResult", "Runtime", "RuntimeOptions", "SessionBusy",
            "list_runs"} <= set(names)
