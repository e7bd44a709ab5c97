"""``agentloom owners delete OWNER --yes`` (000 §7.4, issue #14 item 13): without ``--yes``
nothing changes and it says what would go (exit 2); with it the owner's rows and folders go,
another owner's stay byte for byte, its new runs are refused (``OWNER_DELETED``), a run of it
that another process drives is stopped and deleted, and a second call says it was done."""

from __future__ import annotations

import json
from pathlib import Path

from tests.agent.owners_support import dump, files, owner_rows

from agentloom.folders import default_workspace_root

from .support import SUBPROCESS_TIMEOUT_S, Cli, spawn, write_project
from .test_process import SLEEP_TURNS, _wait_for_exec_started

TURNS = """\
turns:
  - tool_calls:
      - name: fs_write
        arguments: {{path: {name}.txt, content: "{name} was here"}}
  - text: {name} done
"""


def two_agents(folder: Path) -> Path:
    """A config with agents alpha and beta on the script model, each writing its file."""
    folder.mkdir(parents=True)
    for name in ("alpha", "beta"):
        (folder / f"{name}.yaml").write_text(TURNS.format(name=name), encoding="utf-8")
    config = folder / "agentloom.yaml"
    config.write_text("version: 1\nagents:\n" + "".join(
        f"  {name}:\n    model: {{builtin: script, path: {name}.yaml}}\n    tools: [fs.write]\n"
        for name in ("alpha", "beta")), encoding="utf-8")
    return config


def test_s7_4_owners_delete_without_yes_changes_nothing_then_with_yes_deletes_only_that_owner(
    tmp_path: Path, cli: Cli, store_url: str,
) -> None:
    config = two_agents(tmp_path / "proj")
    for name in ("alpha", "beta"):
        ran = cli("run", str(config), "work", "--agent", name, "--session", f"{name}-s",
                  "--store", store_url)
        assert ran.exit_code == 0, ran.stderr
    root = default_workspace_root(tmp_path / "proj")
    before, files_before = dump(store_url), files(root)
    assert any(p.endswith("alpha.txt") for p in files_before)

    refused = cli("owners", "delete", "agent:alpha", "--store", store_url)
    assert refused.exit_code == 2
    assert "CONFIRMATION_REQUIRED" in refused.stderr
    assert "needs --yes; nothing was changed" in refused.stdout and "1 runs" in refused.stdout
    shown = cli.json("owners", "delete", "agent:alpha", "--store", store_url, exit_code=2)
    assert (shown["state"], shown["confirmed"], shown["rows"]["runs"]) == ("would_delete",
                                                                            False, 1)
    bare = cli("owners", "delete", "alpha", "--yes", "--store", store_url)
    assert bare.exit_code == 2 and "OWNER_INVALID" in bare.stderr
    assert "agent:alpha" in bare.stderr
    assert dump(store_url) == before and files(root) == files_before  # nothing changed

    done = cli.json("owners", "delete", "agent:alpha", "--yes", "--store", store_url)

    assert done["state"] == "deleted" and done["rows"]["sessions"] == 1
    assert Path(done["workspace_root"]) == root.absolute()  # found from the store alone
    beta = owner_rows(before, "agent", "beta")
    after = dump(store_url)
    assert [r[:4] for r in after.pop("deleted_owners")] == [("agent", "alpha", "default",
                                                             "deleted")]
    assert after == {t: rows for t, rows in beta.items() if t != "deleted_owners"}
    alpha_root = next(r[3] for r in before["file_roots"] if r[1] == "alpha")
    assert files(root) == {p: h for p, h in files_before.items()
                           if not p.startswith(f"agents/{alpha_root}/")}

    again = cli("run", str(config), "again", "--agent", "alpha", "--store", store_url)
    assert again.exit_code == 1 and "OWNER_DELETED" in again.stderr
    assert cli.json("owners", "delete", "agent:alpha", "--yes", "--store",
                    store_url)["state"] == "already_deleted"
    repeat = cli("owners", "delete", "agent:alpha", "--yes", "--store", store_url)
    assert (repeat.exit_code, repeat.stdout.strip()) == (
        0, "agent:alpha was already deleted; nothing to do")


def test_s7_4_owners_delete_stops_a_run_another_process_drives_and_deletes_it(
    tmp_path: Path, durable_store_url: str,
) -> None:
    cli = Cli(durable_store_url)
    config = write_project(tmp_path / "p", SLEEP_TURNS, tools=["exec"])
    proc = spawn("run", str(config), "sleep a while", "--store", durable_store_url, "--json",
                 cwd=tmp_path)
    try:
        run_id = str(_wait_for_exec_started(cli, proc)["run_id"])
        done = cli.json("owners", "delete", "agent:main", "--yes", "--store", durable_store_url)
        stdout, stderr = proc.communicate(timeout=SUBPROCESS_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()

    assert (done["state"], done["stopped"]) == ("deleted", [run_id])
    assert done["rows"]["runs"] == 1 and done["rows"]["operations"] >= 2
    assert proc.returncode == 1, stderr  # its run was cancelled, not finished
    assert json.loads(stdout)["status"] == "cancelled"
    after = dump(durable_store_url)
    assert [r[:4] for r in after.pop("deleted_owners")] == [("agent", "main", "default",
                                                             "deleted")]
    assert all(not rows for rows in after.values()), after  # nothing of it is left
    assert Path(done["workspace_root"]) == default_workspace_root(tmp_path / "p")
    assert not list((default_workspace_root(tmp_path / "p") / "agents").iterdir())
