"""Issue #35 item 1: ``agentloom.assembly`` turns a ``Config`` into a ``Runtime`` — one
``runtime_from_config`` for agents and workflows — and the old documented import paths
(``agentloom.agent.configured``, ``agentloom.agent.config_parts``,
``agentloom.squad.configured``) still give the same objects, with a ``DeprecationWarning``
naming the new place. That each of those modules holds nothing else is pinned by
``tests/test_layering.py`` (``SHIMS``)."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest
from tests.test_layering import SHIMS

import agentloom.assembly

NAMES = {
    "agentloom.agent.configured": ["runtime_from_config", "environment_policy", "store_url_for",
                                   "STORE_ENV", "agent_specs", "build_catalogs", "BuildCatalogs"],
    "agentloom.agent.config_parts": ["check_config", "model_source", "hook_specs", "hook_functions",
                                     "retry_policy", "sdk_tools", "agent_tools", "think_params",
                                     "max_output_tokens", "user_code", "entry_tools",
                                     "workflow_tools", "model_descriptor"],
    "agentloom.squad.configured": ["runtime_from_config", "workflow_programs"],
}


def test_i35_1_every_shim_listed_here_is_a_shim_of_the_layering_test() -> None:
    assert set(NAMES) == set(SHIMS)


@pytest.mark.parametrize(("module", "name"), [(m, n) for m, names in NAMES.items() for n in names])
def test_i35_1_an_old_path_gives_the_assembly_object_with_a_deprecation_warning(
    module: str, name: str,
) -> None:
    old = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=rf"{module}\.{name} is deprecated: import it from "
                      r"agentloom\.assembly"):
        value = getattr(old, name)
    assert value is getattr(agentloom.assembly, name)


def test_i35_1_from_import_of_an_old_path_warns_at_the_importer() -> None:
    with pytest.warns(DeprecationWarning) as caught:
        from agentloom.agent.configured import runtime_from_config
    assert runtime_from_config is agentloom.assembly.runtime_from_config
    assert caught[0].filename == __file__


def test_i35_1_a_name_assembly_lacks_fails_naming_the_new_place() -> None:
    old = importlib.import_module("agentloom.agent.configured")
    with pytest.raises(AttributeError, match=r"moved to agentloom\.assembly"):
        _ = old.ProgramsFactory  # gone: runtime_from_config builds the workflows itself
    with pytest.raises(AttributeError):
        _ = old.__path__  # module machinery is never lent from assembly


def test_i35_1_one_runtime_from_config_builds_workflows_with_no_factory_injected() -> None:
    assert list(inspect.signature(agentloom.assembly.runtime_from_config).parameters) == [
        "config", "store", "sandbox_backend"]


def test_i35_1_every_assembly_module_is_under_400_lines() -> None:
    folder = Path(agentloom.assembly.__file__).parent
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in folder.glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 400} == {}
