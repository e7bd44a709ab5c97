"""``agentloom init``: an example project that runs offline.

It writes ``agentloom.yaml`` (one agent on the offline ``script`` model with the file tools and
``exec``), ``turns.yaml`` (the script: write a file, read it back, list the folder and run
``echo``, then answer) and ``hooks.py`` (one before-hook on ``exec`` the config refers to).
"""

from __future__ import annotations

from pathlib import Path

from agentloom.cli.errors import UsageFailure

__all__ = ["FILES", "scaffold"]

CONFIG = """\
# AgentLoom configuration (format 1; every key is documented in docs/config.md).
# Run it:   agentloom run agentloom.yaml "write a note"
# Inspect:  agentloom runs list --config agentloom.yaml
version: 1
agents:
  main:
    # The offline script model replays turns.yaml; swap in a real provider with e.g.
    #   connections: {openai: {preset: openai}}  and  model: {connection: openai, name: gpt-4.1}
    model: {builtin: script, path: turns.yaml}
    instructions: You keep notes in the workspace and check your work.
    tools: [fs.write, fs.read, fs.list, exec]
    limits:
      max_steps: 10
    hooks:
      - hook_id: exec-guard
        timing: before
        event: tool
        match: {capability: exec}
        handler: {ref: "hooks:exec_guard"}
"""

TURNS = """\
# Turns of the offline script model (format in docs/models.md). Tool names are the
# model-facing ones: fs.write is fs_write, and so on.
model: scripted
turns:
  - text: I'll write the note first.
    tool_calls:
      - name: fs_write
        arguments: {path: hello.txt, content: "hello from agentloom\\n"}
  - expect: {role: tool}
    tool_calls:
      - name: fs_read
        arguments: {path: hello.txt}
  - expect: {role: tool, contains: hello from agentloom}
    tool_calls:
      - name: fs_list
        arguments: {}
      - name: exec
        arguments: {argv: [echo, note written]}
  - expect: {role: tool, contains: note written}
    text: I wrote hello.txt, read it back, listed the workspace and ran echo.
"""

HOOKS = '''\
"""Hooks for agentloom.yaml. A hook receives a read-only event and returns a decision
(docs/hooks.md); the config names it as "hooks:exec_guard" (this folder is importable)."""

# The programs exec may start. An allow-list: a deny-list of rm, sudo, … is passed by
# "sh -c 'rm …'", "env rm …" or "command rm …"; shells, launchers and interpreters are left
# out on purpose (examples/exec_guard/guards.py in the agentloom repository is a fuller one).
ALLOWED = {"echo", "ls", "cat", "head", "tail", "wc", "grep", "sort", "diff", "true"}


def exec_guard(event):
    """Before exec: allow only the programs of ALLOWED, named bare or from /bin, /usr/bin."""
    payload = event["payload"]
    if "shell_script" in payload:
        return {"decision": "deny", "reason": "this project runs commands as argv, not shell scripts"}
    program = str(payload["argv"][0])
    name = program.rsplit("/", 1)[-1]
    if program not in (name, f"/bin/{name}", f"/usr/bin/{name}") or name not in ALLOWED:
        return {"decision": "deny", "reason": f"{name} is not allowed here (allowed: "
                f"{', '.join(sorted(ALLOWED))})"}
    return {"decision": "allow"}
'''

FILES: dict[str, str] = {"agentloom.yaml": CONFIG, "turns.yaml": TURNS, "hooks.py": HOOKS}


def scaffold(folder: Path, *, force: bool = False) -> list[Path]:
    """Write the example project into ``folder`` (created when missing); return the files.

    Raises:
        UsageFailure: a file exists and ``force`` is false (nothing is written), or ``folder``
            is a file.
    """
    if folder.exists() and not folder.is_dir():
        raise UsageFailure(f"{str(folder)!r} is a file, not a folder", code="NOT_A_FOLDER")
    targets = [folder / name for name in FILES]
    existing = [p for p in targets if p.exists()]
    if existing and not force:
        names = ", ".join(str(p) for p in existing)
        raise UsageFailure(f"{names} already exist(s); nothing was written. Use --force to "
                           "overwrite, or choose another folder", code="FILE_EXISTS")
    folder.mkdir(parents=True, exist_ok=True)
    for path in targets:
        path.write_text(FILES[path.name], encoding="utf-8")
    return targets
