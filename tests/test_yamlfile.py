"""Issue #13 item 7: every YAML file is read by one loader that refuses a key written twice."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agentloom.config.loader import load_config
from agentloom.errors import ConfigError
from agentloom.models.offline import load_script
from agentloom.models.presets import load_preset_file
from agentloom.yamlfile import MAX_DEPTH, load_yaml


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


# Issue #34 (LOW): PyYAML builds nested values by recursion, so a deep enough file ran out of
# Python's stack (RecursionError → INTERNAL_ERROR). The shared loader refuses the depth as a
# YAML error; each kind of file reports it under its own code.
DEEP_FLOW = "a: " + "[" * 5000 + "]" * 5000 + "\n"
DEEP_BLOCK = "".join("  " * i + f"k{i}:\n" for i in range(3000)) + "  " * 3000 + "leaf: 1\n"


@pytest.mark.parametrize("text", [DEEP_FLOW, DEEP_BLOCK], ids=["flow", "block"])
@pytest.mark.parametrize("aliases", [True, False])
def test_i34_yaml_nested_too_deep_is_a_yaml_error_naming_the_line(text: str, aliases: bool) -> None:
    with pytest.raises(yaml.MarkedYAMLError) as caught:
        load_yaml(text, aliases=aliases)
    assert f"nested more than {MAX_DEPTH} levels deep" in str(caught.value)
    assert caught.value.problem_mark is not None and caught.value.problem_mark.line >= 0


def test_i34_yaml_nesting_up_to_the_limit_still_loads() -> None:
    inner = MAX_DEPTH - 1  # the document's root mapping is the first level
    assert load_yaml("a: " + "[" * inner + "1" + "]" * inner) is not None


def test_i34_yaml_too_deep_config_preset_and_script_each_give_their_own_error(
    tmp_path: Path,
) -> None:
    config = tmp_path / "agentloom.yaml"
    config.write_text("version: 1\n" + DEEP_FLOW, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert caught.value.code == "CONFIG_SYNTAX" and "nested more than" in str(caught.value)

    preset = tmp_path / "deep.yaml"
    preset.write_text(DEEP_BLOCK, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_preset_file(preset)
    assert f"preset file {str(preset)!r}: not valid YAML" in str(caught.value)
    assert "nested more than" in str(caught.value)

    script = tmp_path / "script.yaml"
    script.write_text(DEEP_FLOW, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_script(script)
    assert caught.value.code == "SCRIPT_INVALID" and "nested more than" in str(caught.value)
