"""The ``skills`` and ``skill_versions`` tables: frozen records, the reads, the writes.

::

    skills(name PK, digest, updated_at, data)          ──► SkillRecord   ──► get_skill / skills
    skill_versions(digest PK, name, created_at, data)  ──► version_data  ──► versions_of
    Insert("skill_versions", …)  ◄── version_insert(…)   (if_absent: a version is immutable)
    Put("skills", …)             ◄── skill_put(…)        (the name's current version)

A version row's ``data`` is the version as ``skills.versions.SkillVersion.to_dict`` wrote it;
decoding it is the skills package's (it sits above the store).

Owns: ``SkillRecord`` and the rows' shape. Does not own: a version's digest, files and
metadata (``skills.versions``), its files' bytes (``store.blobs``), nor committing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentloom.store.ports import Insert, Put, Store

__all__ = ["SkillRecord", "get_skill", "has_version", "skill_put", "skills", "version_data",
           "version_insert", "versions_of"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillRecord:
    """One ``skills`` row: the current version (``digest``) of skill ``name``; ``data`` holds
    where it was last imported from (``source``)."""

    name: str
    digest: str
    updated_at: float
    data: Mapping[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> SkillRecord:
        return cls(name=row["name"], digest=row["digest"], updated_at=row["updated_at"],
                   data=row.get("data") or {})


def get_skill(store: Store, name: str) -> SkillRecord | None:
    """Skill ``name``'s current version, or None when no skill of that name was imported."""
    row = store.get("skills", {"name": name})
    return None if row is None else SkillRecord.from_row(row)


def skills(store: Store) -> list[SkillRecord]:
    """Every imported skill's current version, by name."""
    return [SkillRecord.from_row(r) for r in store.query("skills", order_by=("name",))]


def version_data(store: Store, digest: str) -> Mapping[str, Any] | None:
    """The stored version ``digest`` (its ``data``), or None when it is not stored."""
    row = store.get("skill_versions", {"digest": digest})
    return None if row is None else row["data"]


def has_version(store: Store, digest: str) -> bool:
    """Whether version ``digest`` is stored."""
    return version_data(store, digest) is not None


def versions_of(store: Store, name: str) -> list[Mapping[str, Any]]:
    """Every stored version of skill ``name`` (its ``data``), oldest first."""
    return [r["data"] for r in store.query("skill_versions", {"name": name},
                                           order_by=("created_at",))]


def version_insert(*, digest: str, name: str, created_at: float,
                   data: Mapping[str, Any]) -> Insert:
    """The ``skill_versions`` row of a version (``if_absent``: the same content is the same
    version, whoever imported it first)."""
    return Insert("skill_versions", {"digest": digest, "name": name, "created_at": created_at,
                                     "data": data}, if_absent=True)


def skill_put(*, name: str, digest: str, updated_at: float, data: Mapping[str, Any]) -> Put:
    """The ``skills`` row that makes ``digest`` the current version of ``name``."""
    return Put("skills", {"name": name, "digest": digest, "updated_at": updated_at,
                          "data": data})


def all_version_data(store: Store) -> list[Mapping[str, Any]]:
    """Every stored version of every skill (its ``data``; ``{}`` when none was stored), in the
    store's order."""
    return [r.get("data") or {} for r in store.query("skill_versions")]
