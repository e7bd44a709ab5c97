"""Operation ids are runtime-minted, unique (also across a fork) and time-ordered."""

from __future__ import annotations

import os
import uuid

from agentloom.ids import new_id


def test_ids_are_uuid7_and_sortable_by_creation() -> None:
    ids = [new_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    assert all(uuid.UUID(i).version == 7 for i in ids)
    assert [i[:13] for i in ids] == sorted(i[:13] for i in ids)


def test_a_forked_child_mints_different_ids_than_its_parent() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.write(write, new_id().encode())
        os._exit(0)
    os.close(write)
    theirs = os.read(read, 64).decode()
    os.waitpid(pid, 0)
    assert theirs != new_id()
