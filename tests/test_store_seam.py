"""Issue #35 item 3 (a typed store seam): no module outside ``store/`` names a store table.

A *raw table access* is a call whose first argument is a string literal naming a table of the
schema — ``store.get("runs", …)``, ``store.query("sessions", …)``, ``Put("runs", …)``,
``Insert(…)``, ``Delete(…)`` — anywhere in ``src/agentloom`` outside ``store/``. Such code goes
through a repository of ``store/`` instead (typed records in, frozen records and write ops
out; the caller still decides *when* the ops commit).

``ALLOWED`` lists the modules that still do it, with how many times. The list may only
shrink: a module not on it, or one with more accesses than listed, fails; one with *fewer*
fails too until its entry is lowered (or removed), so the list always says what is left, and
``CEILING`` (the list's total) only goes down. The scanner is
``bench/architecture_figures.py``'s, so the figure printed there is the one pinned here.
"""

from __future__ import annotations

from collections import Counter

from tests.bench.loader import load_bench

# bench/ stays off sys.path: its a2a.py would hide the a2a SDK from every later test
architecture_figures = load_bench("architecture_figures.py")

CEILING = 0
"""The sum of ``ALLOWED`` — lower it with every entry you lower; never raise it."""

ALLOWED: dict[str, int] = {
}


def counts() -> Counter[str]:
    found = architecture_figures.raw_accesses(architecture_figures.tables())
    return Counter(f.split(":")[0] for f in found)


def test_i35_3_no_table_is_named_outside_store_beyond_the_allow_list() -> None:
    actual = counts()
    grown = {m: n for m, n in actual.items() if n > ALLOWED.get(m, 0)}
    assert not grown, (f"raw table accesses outside store/ (use a store/ repository): {grown}; "
                       "see python bench/architecture_figures.py --list")
    shrunk = {m: (ALLOWED[m], actual.get(m, 0)) for m in ALLOWED if actual.get(m, 0) < ALLOWED[m]}
    assert not shrunk, f"lower these entries of ALLOWED (listed, actual) and CEILING: {shrunk}"


def test_i35_3_the_allow_list_only_shrinks() -> None:
    assert sum(ALLOWED.values()) <= CEILING, "ALLOWED grew past CEILING: the list may only shrink"
    assert sum(ALLOWED.values()) == CEILING, "lower CEILING to the list's new total"


def test_i35_3_the_scanner_sees_a_literal_table_and_ignores_others() -> None:
    known = architecture_figures.tables()
    assert {"runs", "sessions", "operations", "api_keys"} <= known
    found = architecture_figures.accesses_in(
        'store.get("runs", {"run_id": x})\nd.get("runs")\nPut("sessions", {}, {})\n'
        'm.get("color")\nstore.query(table, {})\nDelete("api_keys", {})\n', known)
    # a dict's .get("runs") is counted too: name such a key otherwise
    assert found == [(1, "get", "runs"), (2, "get", "runs"), (3, "Put", "sessions"),
                     (6, "Delete", "api_keys")]
