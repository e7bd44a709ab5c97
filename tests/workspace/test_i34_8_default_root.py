"""Issue #34 (8): where the workspaces live by default — outside the project, one root per
project folder under the state home — and a project that still has the old
``.agentloom/workspaces`` keeps using it, with a warning that says how to move on."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agentloom.config.loader import parse_config
from agentloom.folders import LEGACY_WORKSPACE_ROOT, default_workspace_root


def test_i34_8_the_default_root_is_outside_the_project_one_per_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    one, two = tmp_path / "proj", tmp_path / "other" / "proj"
    root = default_workspace_root(one)
    assert root.parent == tmp_path / "state" / "agentloom" / "workspaces"
    assert root.name.startswith("proj-")
    assert one not in root.parents
    assert default_workspace_root(two) != root  # same folder name, another project
    assert default_workspace_root(one) == root  # stable


def test_i34_8_without_xdg_state_home_the_root_is_under_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_workspace_root(tmp_path / "p").parent == tmp_path / ".local/state/agentloom/workspaces"


def test_i34_8_a_config_without_workspace_root_uses_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    config = parse_config({"version": 1, "agents": {"main": {"model": {"builtin": "test"}}}},
                          base_dir=tmp_path)
    assert config.workspace_root() == default_workspace_root(tmp_path)
    chosen = parse_config({"version": 1, "agents": {"main": {"model": {"builtin": "test"}}},
                           "workspace": {"root": "ws"}}, base_dir=tmp_path)
    assert chosen.workspace_root() == tmp_path / "ws"  # a root that is set is used as it is


def test_i34_8_a_project_with_the_old_workspaces_keeps_them_and_is_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    legacy = tmp_path / LEGACY_WORKSPACE_ROOT
    (legacy / "agents").mkdir(parents=True)  # a run in flight made by an earlier version
    with caplog.at_level(logging.WARNING, logger="agentloom.folders"):
        assert default_workspace_root(tmp_path) == legacy
    message = caplog.records[-1].getMessage()
    assert str(legacy) in message and "remove that folder" in message
    assert "docs/upgrading.md" in message
