"""The sandbox as the CLI shows it (000 §7.2, §7.4): the backend a run was started with is
recorded on the run and shown by ``runs show``; the end of a run's commands is silent when the
sandbox confirms it and one warning line after the live table when it cannot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .support import Cli, RevokingGateway, write_project

ANSWER = "  - text: nothing to run\n"
EXEC_TURNS = """\
  - tool_calls:
      - name: exec
        arguments: {argv: [echo, hi]}
  - expect: {role: tool}
    text: done
"""


def use_gateway(monkeypatch: pytest.MonkeyPatch, *, confirmed: bool) -> list[RevokingGateway]:
    """Every runtime of the test gets a ``RevokingGateway`` when its first exec asks for one."""
    made: list[RevokingGateway] = []

    def make_gateway(policy: Any, *, backend: str, output_dir: Path) -> RevokingGateway:
        made.append(RevokingGateway(confirmed=confirmed))
        return made[-1]

    monkeypatch.setattr("agentloom.environment.make_gateway", make_gateway)
    return made


def warning(run_id: str) -> str:
    return f"warning: commands of run {run_id} may still be running (their end could not be confirmed)"


@pytest.mark.parametrize(("extra", "backend"), [
    ("", "auto"), ("sandbox: {backend: none}\n", "none"), ("sandbox: {backend: landlock}\n", "landlock"),
])
def test_s7_2_backend_none_is_recorded_on_the_run(
    tmp_path: Path, cli: Cli, extra: str, backend: str
) -> None:
    config = write_project(tmp_path / "p", ANSWER, extra=extra)
    run_id = cli.json("run", str(config), "answer", "--store", cli.store)["run_id"]

    shown = cli.json("runs", "show", run_id, "--store", cli.store)
    human = cli("runs", "show", run_id, "--store", cli.store)

    assert shown["sandbox_backend"] == backend
    assert f"  sandbox: {backend}\n" in human.stdout


def test_s7_4_an_unconfirmed_revocation_is_one_warning_line_after_the_live_table(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = use_gateway(monkeypatch, confirmed=False)
    config = write_project(tmp_path / "p", EXEC_TURNS)

    result = cli("run", str(config), "run it", "--store", cli.store)

    assert result.exit_code == 0, result.stderr
    (run_id,) = made[0].revoked
    assert result.stderr.splitlines() == [warning(run_id)]
    assert "may still be running" not in result.stdout and "revocation" not in result.stdout
    assert f"run {run_id} succeeded" in result.stdout


def test_s7_4_an_unconfirmed_revocation_warns_on_stderr_and_leaves_the_json_alone(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = use_gateway(monkeypatch, confirmed=False)
    config = write_project(tmp_path / "p", EXEC_TURNS)

    result = cli("run", str(config), "run it", "--store", cli.store, "--json")

    assert result.exit_code == 0, result.stderr
    (run_id,) = made[0].revoked
    assert result.stderr.splitlines() == [warning(run_id)]
    assert '"status": "succeeded"' in result.stdout and "may still be running" not in result.stdout


def test_s7_4_a_confirmed_revocation_prints_nothing(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = use_gateway(monkeypatch, confirmed=True)
    config = write_project(tmp_path / "p", EXEC_TURNS)

    result = cli("run", str(config), "run it", "--store", cli.store)

    assert result.exit_code == 0, result.stderr
    assert len(made[0].revoked) == 1
    assert result.stderr == ""
