"""Issue #13 item 7: every YAML file is read by one loader that refuses a key written twice."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agentloom.config.loader import load_config
from agentloom.errors import ConfigError
from agentloom.models.offline import load_script
from agentloom.models.presets import load_preset_file
from agentloom.yamlfile import load_yaml


def test_13_7_a_key_written_twice_in_a_preset_file_is_refused_naming_key_and_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "twice.yaml"
    path.write_text("name: twice\nvariants: {}\nname: again\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_preset_file(path)
    message = str(caught.value)
    assert f"preset file {str(path)!r}: not valid YAML" in message
    assert "key 'name' is written twice" in message
    assert "line 3" in message


def test_13_7_a_key_written_twice_in_a_script_file_is_refused_naming_key_and_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "script.yaml"
    path.write_text("turns:\n  - text: hi\nwindow: 100\nturns: []\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_script(path)
    assert caught.value.code == "SCRIPT_INVALID"
    assert "key 'turns' is written twice" in str(caught.value)
    assert "line 4" in str(caught.value)


def test_13_7_a_key_written_twice_in_a_config_is_refused_naming_key_and_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "agentloom.yaml"
    path.write_text("version: 1\nversion: 1\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.code == "CONFIG_SYNTAX"
    assert f"{path}:2:1: not valid YAML: key 'version' is written twice" in str(caught.value)


def test_13_7_the_loader_keeps_safe_constructors_and_refuses_aliases_only_when_asked() -> None:
    assert load_yaml("a: &x [1]\nb: *x\n") == {"a": [1], "b": [1]}
    with pytest.raises(yaml.YAMLError, match=r"aliases \(\*x\) are not allowed in a script file"):
        load_yaml("a: &x [1]\nb: *x\n", aliases=False, what="a script file")
    with pytest.raises(yaml.YAMLError):
        load_yaml("a: !!python/object:os.system {}\n")
