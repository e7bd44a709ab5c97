"""``agentloom skills import SOURCE [--commit C] [--subdir D] [--allow-unknown]``,
``agentloom skills list`` and ``agentloom skills show NAME``: Agent Skills imported into a
store as immutable versions (docs/skills.md; docs/cli.md is the reference).

The store is chosen as for ``runs``: ``--store URL`` > ``$AGENTLOOM_STORE`` > the store of
``--config CONFIG`` > ``sqlite:///.agentloom/agentloom.db``. ``import`` creates the store when
it does not exist; ``list`` and ``show`` only read one. ``import --config CONFIG`` without
SOURCE imports the config's ``skills:`` sources and checks its agents' ``skills:`` names.
A refused import exits 2 (``SKILL_*`` codes) and stores nothing. ``import_changed_skills`` is
what ``agentloom run`` and ``serve`` do first: the ``path`` sources whose content changed.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Any

import typer

from agentloom.assembly import store_url_for
from agentloom.cli.errors import EXIT_OK, UsageFailure
from agentloom.cli.output import print_json, say, setup_logging, stderr_console, stdout_console
from agentloom.cli.stores import open_existing_store, resolve_store_url, sqlite_path
from agentloom.cli.terminal import printable
from agentloom.config import Config, load_config
from agentloom.skills import (
    ImportReport,
    SkillImportError,
    SkillVersion,
    SourceSpec,
    import_changed_paths,
    import_configured,
    import_skills,
    list_skills,
    skill_history,
)
from agentloom.skills.errors import FIELD_UNKNOWN
from agentloom.store import open_store

__all__ = ["import_changed_skills", "skills_app"]

skills_app = typer.Typer(no_args_is_help=True, help="Import Agent Skills (folders, archives, "
                         "pinned git commits) and inspect their versions.")

_JSON = Annotated[bool, typer.Option("--json", help="Print one JSON value on stdout, nothing else.")]
_STORE = Annotated[str | None, typer.Option(
    "--store", metavar="URL", help="Store URL (sqlite:///path.db, postgresql://…). Default: "
    "$AGENTLOOM_STORE, else the store of --config, else sqlite:///.agentloom/agentloom.db.")]
_CONFIG = Annotated[Path | None, typer.Option(
    "--config", "-c", metavar="CONFIG", help="A config file: its store is used; `import` "
    "without SOURCE imports its skills: sources.")]


def _refused(exc: SkillImportError) -> UsageFailure:
    return UsageFailure(exc.error.message, code=exc.code)


def import_changed_skills(config: Config, store: str | None = None) -> None:
    """Import the ``path`` sources of ``config.skills`` whose content changed since their last
    import (``skills.configured.import_changed_paths``: the checks and versions of ``skills
    import``), into the store the runtime will use (``store``: as ``runtime_from_config``), and
    say one line per skill whose current version changed on stderr. ``git`` sources are left to
    ``agentloom skills import``. A refusal exits 2 (``SKILL_*``), naming ``skills[i]``."""
    if not any(entry.path is not None for entry in config.skills):
        return
    opened = open_store(store_url_for(config, store))
    try:
        changed = import_changed_paths(config, opened)
    except SkillImportError as exc:
        if exc.code == FIELD_UNKNOWN:  # run has no --allow-unknown: skills import has
            head = exc.error.message.split("; remove them", 1)[0]
            raise UsageFailure(f"{head}; remove them, or import it once with them ignored: "
                               f"agentloom skills import --config {shlex.quote(config.origin)} "
                               "--allow-unknown (later runs keep that version until the folder "
                               "changes)", code=exc.code) from None
        raise _refused(exc) from None
    finally:
        opened.close()
    err = stderr_console()
    for skill in changed:
        short = f"sha256:{skill.digest[:12]}"
        say(err, f"skill {skill.name!r} imported from {printable(skill.source)}: version {short}"
            if skill.change == "new" else
            f"skill {skill.name!r} from {printable(skill.source)}: back to version {short} "
            "(imported before)")


@skills_app.command("import")
def skills_import(
    source: Annotated[str | None, typer.Argument(
        metavar="SOURCE", help="A folder, an archive (.zip, .tar, .tar.gz, .tgz), or a git "
        "URL (https:// or ssh://, with --commit).", show_default=False)] = None,
    commit: Annotated[str | None, typer.Option(
        "--commit", metavar="C", help="The full 40-hex commit of a git SOURCE.")] = None,
    subdir: Annotated[str | None, typer.Option(
        "--subdir", metavar="D", help="Import only the skills below this folder of SOURCE.")
    ] = None,
    allow_unknown: Annotated[bool, typer.Option(
        "--allow-unknown", help="Import a SKILL.md with unknown front-matter fields, ignoring "
        "them with a warning (default: refused).")] = False,
    store: _STORE = None,
    config: _CONFIG = None,
    as_json: _JSON = False,
) -> None:
    """Import every skill of SOURCE (each folder holding a SKILL.md) as an immutable,
    content-addressed version: identical content is the same version, changed content a new
    one (the previous is kept). Every member is checked first; a refusal stores nothing
    (exit 2)."""
    setup_logging()
    if source is None and config is None:
        raise UsageFailure("give SOURCE (a folder, an archive or a git URL with --commit), or "
                           "--config CONFIG to import its skills: sources")
    url = resolve_store_url(store, config)
    path = sqlite_path(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    opened = open_store(url)
    try:
        if source is None:
            assert config is not None
            reports = import_configured(load_config(config), opened, allow_unknown=allow_unknown)
        else:
            spec = SourceSpec.parse(source, commit=commit, subdir=subdir)
            reports = [import_skills(spec, opened, allow_unknown=allow_unknown)]
    except SkillImportError as exc:
        if exc.error.category == "transport":
            raise
        raise _refused(exc) from None
    finally:
        opened.close()
    if as_json:
        print_json(reports[0].to_dict() if source is not None else
                   [r.to_dict() for r in reports])
        raise typer.Exit(EXIT_OK)
    _print_reports(reports)
    raise typer.Exit(EXIT_OK)


def _print_reports(reports: list[ImportReport]) -> None:
    out = stdout_console()
    for report in reports:
        where = report.source.location + (f" @ {report.source.commit}" if report.source.commit
                                          else "")
        say(out, f"{printable(where)}: {len(report.skills)} skill(s)")
        for item in report.skills:
            v = item.version
            say(out, f"  {v.name}  {v.digest[:12]}  {item.status}  {len(v.files)} file(s)")
            for note in (*v.warnings, *v.unsupported):
                say(out, f"    warning: {printable(note)}")
            if v.hooks is not None:
                say(out, "    hooks: kept as inert resources (bind them in a config to use)")
        for skipped in report.skipped:
            say(out, f"  skipped: {printable(skipped)}")


@skills_app.command("list")
def skills_list(store: _STORE = None, config: _CONFIG = None, as_json: _JSON = False) -> None:
    """List the current version of every imported skill: name, digest, description."""
    setup_logging()
    opened = open_existing_store(resolve_store_url(store, config), read_only=True)
    try:
        found = list_skills(opened)
    finally:
        opened.close()
    if as_json:
        print_json([_summary(v) for v in found])
        raise typer.Exit(EXIT_OK)
    out = stdout_console()
    if not found:
        say(out, "no skills imported (agentloom skills import SOURCE)")
    for v in found:
        say(out, f"{v.name}  {v.digest[:12]}  {printable(v.description.splitlines()[0])}")
    raise typer.Exit(EXIT_OK)


def _summary(v: SkillVersion) -> dict[str, Any]:
    return {"name": v.name, "digest": v.digest, "description": v.description,
            "entry": v.entry, "source": v.to_dict()["source"], "files": len(v.files)}


@skills_app.command("show")
def skills_show(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The skill's name.",
                                        show_default=False)],
    store: _STORE = None,
    config: _CONFIG = None,
    as_json: _JSON = False,
) -> None:
    """Show skill NAME: its current version (source, metadata, files, unsupported fields,
    inert hooks) and every version imported, oldest first. Exit 2 when there is none."""
    setup_logging()
    opened = open_existing_store(resolve_store_url(store, config), read_only=True)
    try:
        current, versions = skill_history(opened, name)
    except SkillImportError as exc:
        raise _refused(exc) from None
    finally:
        opened.close()
    detail = {**current.to_dict(), "versions": [
        {"digest": v.digest, "created_at": v.created_at, "current": v.digest == current.digest}
        for v in versions]}
    if as_json:
        print_json(detail)
        raise typer.Exit(EXIT_OK)
    out = stdout_console()
    src = current.source
    say(out, f"{current.name}  {current.digest}")
    say(out, f"  {printable(current.description)}")
    say(out, f"  source: {src.kind} {printable(src.location)}"
             + (f" @ {src.commit}" if src.commit else "") + (f" folder {src.folder}" if src.folder
                                                              else ""))
    for key, value in sorted(current.metadata.items()):
        if key not in ("name", "description"):
            say(out, f"  {key}: {printable(str(value))}")
    for note in (*current.warnings, *current.unsupported):
        say(out, f"  warning: {printable(note)}")
    if current.hooks is not None:
        say(out, "  hooks: kept as inert resources (never bound automatically)")
    say(out, f"  files ({len(current.files)}):")
    for f in current.files:
        say(out, f"    {printable(f.path)}  {f.size} B{'  (executable)' if f.executable else ''}")
    say(out, f"  versions ({len(versions)}):")
    for v in versions:
        say(out, f"    {v.digest[:12]}{'  current' if v.digest == current.digest else ''}")
    raise typer.Exit(EXIT_OK)
