"""A project folder for the admission and CLI tests: the issue's pinned config (intents: +
commands:) and a handler module whose side effects are lines in ``effects.log``."""

from __future__ import annotations

from pathlib import Path

CONFIG = """\
version: 1
agents:
  main:
    model: {builtin: test}
intents:
  move_meeting:
    description: Move a meeting to another day
    examples: ["move the meeting to friday"]
    rules: [{pattern: "move (the )?meeting( to (?P<day>\\\\w+))?"}]
    slots: {day: {type: enum, values: [monday, tuesday, wednesday, thursday, friday], required: true}}
    expectations: [day]
    action: meeting.move
  wipe_disk:
    rules: [{pattern: "wipe disk (?P<disk>\\\\w+)"}]
    slots: {disk: {type: string, required: true}}
    action: disk.wipe
  crash:
    rules: [{pattern: "crash now"}]
    action: crash.now
commands:
  crash.now:
    handler: {kind: python, ref: "my_commands:crash"}
  meeting.move:
    params: {type: object, properties: {day: {type: string}}, required: [day]}
    risk: write                         # read | write | dangerous
    handler: {kind: python, ref: "my_commands:move"}
  disk.wipe:
    params: {type: object, properties: {disk: {type: string}}, required: [disk]}
    risk: dangerous
    handler: {kind: python, ref: "my_commands:wipe"}
"""

HANDLERS = '''\
from pathlib import Path

LOG = Path(__file__).with_name("effects.log")


def move(params, ctx):
    with LOG.open("a") as f:
        f.write(f"move {params['day']} {ctx.operation_id}\\n")
    return {"moved_to": params["day"]}


def crash(params, ctx):
    import os, signal
    with LOG.open("a") as f:
        f.write(f"crash {ctx.operation_id}\\n")
    os.kill(os.getpid(), signal.SIGKILL)  # the process dies mid-Attempt, after the effect


async def wipe(params, ctx):
    with LOG.open("a") as f:
        f.write(f"wipe {params['disk']} {ctx.operation_id}\\n")
    return "wiped"
'''


def write_project(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "my_commands.py").write_text(HANDLERS, encoding="utf-8")
    config = folder / "agentloom.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    return config


def effects(folder: Path) -> list[str]:
    log = folder / "effects.log"
    return log.read_text().splitlines() if log.exists() else []
