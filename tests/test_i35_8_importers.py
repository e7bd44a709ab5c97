"""Issue #35 item 8: the three "module:attr" importers use ``pkgutil.resolve_name`` — none walks
attributes by hand — and keep their errors: a hook ref and a config ref that do not import or
lack the attribute are ConfigErrors naming the ref; a command handler ref raises as Python does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentloom.agent.commands import import_ref as command_ref
from agentloom.assembly.imports import import_ref as config_ref
from agentloom.errors import ConfigError
from agentloom.hooks.handlers.python import resolve_ref as hook_ref

SRC = Path(__file__).resolve().parents[1] / "src" / "agentloom"


def test_i35_8_no_importer_walks_attributes_by_hand() -> None:
    walkers = [p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py")
               if re.search(r"for \w+ in attr\.split\(\"\.\"\)", p.read_text(encoding="utf-8"))]
    assert walkers == []


def test_i35_8_each_importer_finds_a_dotted_attribute() -> None:
    import os.path

    assert hook_ref("os.path:join") is os.path.join
    assert command_ref("os.path:join") is os.path.join
    assert config_ref("json:JSONDecoder.decode", "x.ref", Path(".")) is __import__("json").JSONDecoder.decode


def test_i35_8_bad_refs_keep_their_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot import 'no_such_mod_35'"):
        hook_ref("no_such_mod_35:f")
    with pytest.raises(ConfigError, match=r"'os\.path' has no 'nope'"):
        hook_ref("os.path:nope")
    with pytest.raises(ConfigError, match="must look like"):
        hook_ref("os.path")
    with pytest.raises(ConfigError, match=r"agents\.main\.ref: module 'os\.path' has no attribute 'nope'"):
        config_ref("os.path:nope", "agents.main.ref", tmp_path)
    with pytest.raises(ConfigError, match="has no attribute ''"):
        config_ref("os.path", "agents.main.ref", tmp_path)
    with pytest.raises(ImportError):
        command_ref("no_such_mod_35:f")
    with pytest.raises(AttributeError):
        command_ref("os.path:nope")
