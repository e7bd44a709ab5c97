"""Issue 36 (7): `skills: ["*"]` means every imported skill, and the capabilities an agent gets
without listing them (`result.read`; `skill.list` / `skill.read` with skills) may be listed in
its `tools:` too — accepted, and offered once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentloom.agent.spec import tool_key
from agentloom.assembly import agent_specs, runtime_from_config
from agentloom.config import load_config
from agentloom.errors import ConfigError
from agentloom.skills import import_configured
from agentloom.store import open_store

from .support import write_skill

HEAD = "version: 1\nskills:\n  - {path: ./skills}\nagents:\n  main:\n    model: {builtin: test}\n"


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agentloom.yaml"
    path.write_text(HEAD + text, encoding="utf-8")
    return path


def _imported(tmp_path: Path, path: Path) -> str:
    write_skill(tmp_path / "skills", "pdf")
    write_skill(tmp_path / "skills", "release-notes")
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(url)
    try:
        import_configured(load_config(path), store)
    finally:
        store.close()
    return url


def test_i36_7_skills_star_in_a_list_means_every_skill(tmp_path: Path) -> None:
    path = _config(tmp_path, '    skills: ["*"]\n')
    config = load_config(path)
    assert config.agents["main"].skills == "*"
    runtime = runtime_from_config(config, store=_imported(tmp_path, path))
    try:
        assert sorted(runtime.kernel.skills.bound()["main"]) == ["pdf", "release-notes"]
    finally:
        asyncio.run(runtime.aclose())


@pytest.mark.parametrize(("names", "message"), [
    ('["*", pdf]', 'agents.main.skills: "*" means every imported skill: write skills: "*" alone, '
                   "or only names"),
    ("[pdf, PDF]", "agents.main.skills: [1] 'PDF' is not a skill name (1-64 lowercase letters, "
                   "digits and single '-'); write the name from its SKILL.md, or skills: \"*\" "
                   "for every imported skill"),
    ("pdf", 'agents.main.skills: must be a list of skill names, or "*" for every imported skill '
            "(got 'pdf')"),
])
def test_i36_7_bad_agent_skills_are_one_problem_saying_what_to_write(
        tmp_path: Path, names: str, message: str) -> None:
    path = _config(tmp_path, f"    skills: {names}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: {message}"


def test_i36_7_auto_capabilities_may_be_listed_and_are_offered_once(tmp_path: Path) -> None:
    path = _config(tmp_path, "    tools: [fs.read, result.read, skill.read, skill.list]\n"
                   "    skills: [pdf]\n")
    url = _imported(tmp_path, path)
    config = load_config(path)
    [spec] = agent_specs(config, store=url)
    assert [tool_key(t) for t in spec.tools] == ["fs.read", "skill.list", "skill.read"]
    runtime = runtime_from_config(config, store=url)  # publishes result.read itself, once
    try:
        offered = runtime.kernel.registry.for_role(runtime.release_id, "main").specs
        assert sorted(k for k in offered if not k.startswith("model_")) == [
            "fs_read", "result_read", "skill_list", "skill_read"]
    finally:
        asyncio.run(runtime.aclose())


def test_i36_7_result_read_may_be_listed_by_an_agent_without_skills(tmp_path: Path) -> None:
    path = _config(tmp_path, "    tools: [result.read, fs.read]\n")
    [spec] = agent_specs(load_config(path), store=f"sqlite:///{tmp_path / 'store.db'}")
    assert [tool_key(t) for t in spec.tools] == ["fs.read"]


def test_i36_7_skill_tools_without_skills_fail_at_load_naming_the_entry(tmp_path: Path) -> None:
    path = _config(tmp_path, "    tools: [fs.read, skill.read]\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f"{path}: agents.main.tools[1]: 'skill.read' comes with skills: an agent with skills: "
        "gets skill.list and skill.read; add skills: or remove it")
