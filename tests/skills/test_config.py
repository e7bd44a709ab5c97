"""Issue #16 Skills config: the top-level ``skills:`` sources and an agent's ``skills:``
names — unknown keys are errors naming the key; names are checked against what the sources
hold when they are imported (``agentloom skills import --config``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentloom.cli.main import app
from agentloom.config import load_config
from agentloom.errors import ConfigError
from agentloom.skills import agent_skills, import_configured, list_skills
from agentloom.store import open_store

from .support import write_skill

HEAD = "version: 1\nagents:\n  main:\n    model: {builtin: test}\n"


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agentloom.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_issue16_skills_sources_and_agent_names_load(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, HEAD + "    skills: [pdf, release-notes]\n"
                                 "skills:\n  - {path: ./skills}\n"
                                 f"  - {{git: 'https://example.org/s.git', commit: {'a' * 40}, "
                                 "subdir: pdf}\n"))
    assert config.agents["main"].skills == ("pdf", "release-notes")
    assert [(s.path, s.git, s.subdir) for s in config.skills] == [
        ("./skills", None, None), (None, "https://example.org/s.git", "pdf")]
    star = load_config(_config(tmp_path, HEAD + "    skills: '*'\n"))
    assert star.agents["main"].skills == "*"


@pytest.mark.parametrize(("text", "words"), [
    ("skills:\n  - {path: ./s, branch: main}\n", ("skills[0].branch", "unknown key 'branch'")),
    ("skills:\n  - {git: 'https://example.org/s.git', commit: main}\n",
     ("skills[0]", "full 40-hex commit")),
    ("skills:\n  - {path: ./s, git: 'https://example.org/s.git'}\n",
     ("skills[0]", "exactly one of path")),
    ("skills:\n  - {path: ./s, commit: " + "a" * 40 + "}\n", ("commit is for a git source",)),
])
def test_issue16_bad_skills_sources_fail_at_load_naming_the_key(
        tmp_path: Path, text: str, words: tuple[str, ...]) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(_config(tmp_path, HEAD + text))
    for word in words:
        assert word in str(caught.value), str(caught.value)


@pytest.mark.parametrize(("names", "words"), [
    ("[PDF]", ("agents.main.skills", "not a skill name")),
    ("[pdf, pdf]", ("agents.main.skills[1]", "listed twice")),
])
def test_issue16_bad_agent_skill_names_fail_at_load(tmp_path: Path, names: str,
                                                    words: tuple[str, ...]) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(_config(tmp_path, HEAD + f"    skills: {names}\n"))
    for word in words:
        assert word in str(caught.value), str(caught.value)


def test_issue16_import_configured_checks_agent_names_against_imported_skills(
        tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "pdf")
    write_skill(tmp_path / "skills", "release-notes")
    path = _config(tmp_path, HEAD + "    skills: [pdf, release-nots]\n"
                   "skills:\n  - {path: ./skills}\n")
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    with pytest.raises(ConfigError) as caught:
        import_configured(load_config(path), store)
    assert "agents.main.skills[1]" in str(caught.value)
    assert "no imported skill named 'release-nots'" in str(caught.value)
    store.close()

    path.write_text(HEAD + "    skills: [pdf]\nskills:\n  - {path: ./skills}\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["skills", "import", "--config", str(path), "--json"],
                                catch_exceptions=False, env={"AGENTLOOM_STORE": ""})
    assert result.exit_code == 0, result.stderr
    [report] = json.loads(result.stdout)
    assert [s["name"] for s in report["skills"]] == ["pdf", "release-notes"]
    store = open_store(f"sqlite:///{tmp_path / '.agentloom' / 'agentloom.db'}")
    sets = agent_skills(load_config(path), {v.name: v for v in list_skills(store)})
    assert [(s.agent, [v.name for v in s.versions]) for s in sets] == [("main", ["pdf"])]
    store.close()
