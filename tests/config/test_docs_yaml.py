"""Issue #12 point 8: every YAML example in docs/*.md is accepted by the code that reads it.

A configuration (``version: 1``) is loaded as it is by ``load_config``; a fragment of one —
top-level keys such as ``agents`` or ``connections``, an agent's ``hooks`` list, or agent keys
written one per line as alternatives — is completed into the smallest configuration around it
(the built-in ``test`` model for an agent without one, a stub connection for each name it
uses) and loaded the same way.
Provider preset files go through ``parse_preset`` and model scripts through ``parse_script``.
A block this test cannot place fails, so a new example cannot slip past it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from tests.hooks.test_i35_4_handler_kinds import documented_handler_kind

from agentloom.config import load_config
from agentloom.config.model import AgentConfig, Config
from agentloom.errors import ConfigError
from agentloom.models.offline import parse_script
from agentloom.models.presets import list_presets, parse_preset

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"^```ya?ml\n(.*?)^```", re.S | re.M)
TOP_KEYS = set(Config.model_fields)
AGENT_KEYS = set(AgentConfig.model_fields)
STUB_SCRIPT = "turns:\n  - text: done\n"
PRESETS = Path(__file__).resolve().parents[2] / "src" / "agentloom" / "models" / "preset_data"
PRESET_PARTS = {"models", "discovery"}  # keys a docs block may show of a preset file alone


def _blocks() -> list[tuple[str, str]]:
    found = []
    for doc in sorted(DOCS.glob("*.md")):
        text = doc.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            found.append((f"{doc.name}:{text[: match.start()].count(chr(10)) + 1}", match.group(1)))
    return found


BLOCKS = _blocks()


def _connections_used(value: Any) -> set[str]:
    if isinstance(value, dict):
        named = {value["connection"]} if isinstance(value.get("connection"), str) else set()
        return named.union(*(_connections_used(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_connections_used(v) for v in value))
    return set()


def _complete(fragment: dict[str, Any]) -> dict[str, Any]:
    """The smallest configuration around a fragment of top-level keys."""
    data = {"version": 1, **fragment}
    data.setdefault("agents", {"main": {}})
    data["agents"] = {name: {"model": {"builtin": "test"}, **agent}  # a fragment may leave it out
                      for name, agent in data["agents"].items()}
    connections = dict(data.get("connections") or {})
    for name in sorted(_connections_used(data["agents"]) - set(connections)):
        connections[name] = {"preset": name if name in list_presets() else "openai"}
    if connections:
        data["connections"] = connections
    return data


def _load(tmp_path: Path, data: dict[str, Any]) -> None:
    for path in _script_paths(data):  # a script model's file must exist at load time
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(STUB_SCRIPT, encoding="utf-8")
    config = tmp_path / "agentloom.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    load_config(config)


def _script_paths(data: dict[str, Any]) -> list[str]:
    return [a["model"]["path"] for a in data["agents"].values()
            if isinstance(a.get("model"), dict) and a["model"].get("builtin") == "script"]


def _configs(text: str) -> list[dict[str, Any]]:
    """The configurations a block stands for (several when it lists alternatives)."""
    data = yaml.safe_load(text)
    assert isinstance(data, dict), "a YAML example is a mapping"
    keys = set(data)
    if "version" in keys and not keys & {"variants", "turns"}:
        return [data]
    if keys <= TOP_KEYS:
        return [_complete(data)]
    if keys == {"hooks"}:
        return [_complete({"agents": {"main": {"hooks": data["hooks"]}}})]
    if keys <= AGENT_KEYS:  # agent keys, possibly one alternative per line: each on its own
        lines = [line for line in text.splitlines() if line.strip() and not line.startswith((" ", "#"))]
        agents = [yaml.safe_load(line) for line in lines]
        return [_complete({"agents": {"main": agent}}) for agent in agents]
    raise AssertionError(f"not a configuration or a fragment of one: top-level keys {sorted(keys)}")


def _check(where: str, text: str, folder: Path) -> None:
    data = yaml.safe_load(text)
    if isinstance(data, dict) and "variants" in data:
        parse_preset(data, source=where, stem=data["name"])
    elif isinstance(data, dict) and "turns" in data:
        parse_script(data, source=where)
    elif isinstance(data, dict) and data and set(data) <= PRESET_PARTS:
        # a part of a preset file: checked inside a shipped preset, as its loader reads it
        shipped = yaml.safe_load((PRESETS / "openai.yaml").read_text(encoding="utf-8"))
        parse_preset({**shipped, **data}, source=where, stem="openai")
    else:
        for config in _configs(text):
            _load(folder, config)


def test_12_8_every_yaml_example_in_the_docs_is_accepted_by_its_loader(tmp_path: Path) -> None:
    refused = {}
    with documented_handler_kind():  # docs/hooks.md's `kind: denylist`, imported as it says
        for i, (where, text) in enumerate(BLOCKS):
            folder = tmp_path / str(i)
            folder.mkdir()
            try:
                _check(where, text, folder)
            except (ConfigError, AssertionError) as exc:
                refused[where] = str(exc)

    assert refused == {}


def test_12_8_the_docs_show_the_model_hooks_example_in_the_configs_own_keys() -> None:
    (text,) = [t for where, t in BLOCKS if where.startswith("models.md") and "cap-summaries" in t]
    (hook,) = yaml.safe_load(text)["agents"]["main"]["hooks"]
    assert hook["hook_id"] == "cap-summaries" and hook["timing"] == "before" and hook["event"] == "model"
    assert len(BLOCKS) >= 9  # the docs' examples are all found
