from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from calib.core.errors import StoreError
from calib.core.records import Call, ParsedSession, Part, Session
from calib.store.columns import check_unique, records_to_columns, records_to_tables
from calib.store.store import Store, migrations
from calib.store.writes import AppendConflict, FileWrite


def _session(n_calls: int = 2, uid: str = "gemini-cli:s1") -> ParsedSession:
    session = Session(uid, "gemini-cli", "s1", "/tmp/s1.json", "gemini-json-parts")
    calls, parts = [], []
    for k in range(n_calls):
        parts.append(Part(f"{uid}:u{k}", uid, 2 * k, "user", "user_text", f"question {k}"))
        call_uid = f"{uid}:c{k}"
        calls.append(
            Call(
                call_uid,
                uid,
                k,
                0,
                2 * k + 1,
                "ok",
                "gemini",
                input=1000 + 100 * k,
                output=20,
                ctx=1000 + 100 * k,
                carry=20,
                usage_raw={"input": 1000 + 100 * k, "output": 20},
            )
        )
        parts.append(
            Part(
                f"{uid}:a{k}", uid, 2 * k + 1, "assistant", "assistant_text", f"answer {k}", call_uid=call_uid
            )
        )
    return ParsedSession(session, calls, parts)


def test_migrations_are_numbered_and_recorded(store: Store) -> None:
    versions = [v for v, _, _ in migrations()]
    assert versions == sorted(set(versions))
    assert store.applied_migrations() == versions
    assert store.migrate() == []


def test_write_is_idempotent_and_keeps_raw_usage(store: Store) -> None:
    first = store.write([_session()])
    assert (first.sessions, first.calls, first.parts) == (1, 2, 4)
    again = store.write([_session()])
    assert (again.sessions, again.calls, again.parts) == (0, 0, 0)
    assert store.counts()["calls"] == 2
    calls = store.calls()
    assert calls["delta"].to_list() == [None, 1100 - 1000 - 20]
    assert calls["usage_raw"][0] == '{"input":1000,"output":20}'


def test_rewrite_replaces_a_session(store: Store) -> None:
    store.write([_session(3)])
    counts = store.write([_session(2)])
    assert counts.calls == 0
    assert store.counts()["calls"] == 2


def test_failed_write_adds_nothing(store: Store) -> None:
    store.write([_session()])
    broken = _session(uid="gemini-cli:s2")
    broken.calls[1].uid = broken.calls[0].uid  # two rows with one natural key
    with pytest.raises(StoreError, match="share the uid"):
        store.write([broken])
    assert store.counts() == {"sessions": 1, "calls": 2, "parts": 4, "agent_estimates": 0}


def test_check_unique_names_the_uid_two_rows_share() -> None:
    check_unique(records_to_columns([_session()]))
    broken = _session(uid="gemini-cli:s2")
    broken.parts[2].uid = broken.parts[0].uid
    with pytest.raises(StoreError, match=f"two parts share the uid '{broken.parts[0].uid}'"):
        check_unique(records_to_columns([broken]))


def test_rows_with_a_shared_uid_are_refused_where_they_are_laid_out(store: Store) -> None:
    # Uids are checked where records become rows (in ingest's parsing workers), never by the writer.
    broken = _session(uid="gemini-cli:s2")
    broken.calls[1].uid = broken.calls[0].uid
    with pytest.raises(StoreError, match=f"two calls share the uid '{broken.calls[0].uid}'"):
        records_to_tables([broken])
    assert store.counts()["calls"] == 0


def test_locked_store_is_a_one_line_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    db = tmp_path / "locked.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb,sys,time; c=duckdb.connect({str(db)!r}); print('ok', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ok"
        with pytest.raises(StoreError) as info:
            Store(db)
        message = str(info.value)
        assert "locked" in message and str(db) in message and "\n" not in message
    finally:
        holder.kill()
        holder.wait()


def _unit(parsed: ParsedSession, append: bool = False) -> FileWrite:
    return FileWrite(records_to_tables([parsed]), append=append)


def test_batch_of_many_sources_is_one_write_and_the_later_source_wins(store: Store) -> None:
    first = _session(3, uid="gemini-cli:a")
    other = _session(1, uid="gemini-cli:b")
    again = _session(2, uid="gemini-cli:a")
    counts = store.write_batch([_unit(first), _unit(other), _unit(again)])
    assert (counts.sessions, counts.calls, counts.parts) == (2, 3, 6)
    assert store.counts() == {"sessions": 2, "calls": 3, "parts": 6, "agent_estimates": 0}


def test_writes_inside_a_transaction_commit_or_roll_back_together(store: Store) -> None:
    store.begin()
    store.write_batch([_unit(_session(2, uid="gemini-cli:a"))])
    broken = _session(uid="gemini-cli:b")
    broken.calls[1].uid = broken.calls[0].uid
    with pytest.raises(StoreError, match="share the uid"):
        store.write_batch([_unit(broken)])
    # A rejected batch leaves the open transaction usable: the next one still joins it.
    store.write_batch([_unit(_session(1, uid="gemini-cli:c"))])
    store.rollback()
    assert store.counts()["sessions"] == 0 and not store.in_transaction
    store.begin()
    store.write_batch([_unit(_session(2, uid="gemini-cli:a"))])
    store.commit()
    assert store.counts() == {"sessions": 1, "calls": 2, "parts": 4, "agent_estimates": 0}


def test_append_extends_a_stored_session(store: Store) -> None:
    store.write([_session(2)])
    grown = _session(3)
    tail = ParsedSession(grown.session, grown.calls[2:], grown.parts[4:])
    tail.session.title = "now with a title"
    counts = store.write_batch([_unit(tail, append=True)])
    assert (counts.sessions, counts.calls, counts.parts) == (0, 1, 2)
    assert store.calls()["seq"].to_list() == [0, 1, 2]
    assert store.sessions()["title"].to_list() == ["now with a title"]


def test_append_of_rows_already_stored_is_a_conflict_and_writes_nothing(store: Store) -> None:
    store.write([_session(2)])
    before = store.counts()
    with pytest.raises(AppendConflict):
        store.write_batch([_unit(_session(3), append=True)])
    with pytest.raises(AppendConflict):  # a session that is not stored cannot be extended
        store.write_batch([_unit(_session(1, uid="gemini-cli:new"), append=True)])
    assert store.counts() == before


def test_calls_and_parts_have_no_primary_key_index_but_keep_not_null(store: Store) -> None:
    kinds = store.con.execute(
        "SELECT table_name, constraint_type FROM information_schema.table_constraints "
        "WHERE table_name IN ('calls', 'parts')"
    ).fetchall()
    assert kinds and {k for _, k in kinds} == {"CHECK"}  # NOT NULL only
    with pytest.raises(duckdb.ConstraintException):
        store.con.execute(
            "INSERT INTO parts (part_uid, session_uid, seq, role, kind) VALUES ('p', 's', 0, 'user', 'x')"
        )


def test_release_cache_drops_the_cached_blocks_and_keeps_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from calib.store.store import limit_memory, release_cache

    db = tmp_path / "big.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(
            "CREATE TABLE t AS SELECT range AS i, md5(range::VARCHAR) || md5((-range)::VARCHAR) AS s "
            "FROM range(3000000)"
        )
    with duckdb.connect(str(db)) as con:
        monkeypatch.setenv("CALIB_MEMORY_LIMIT", "300MB")
        limit_memory(con)
        con.execute("SELECT count(*) FROM t WHERE contains(s, 'y')").fetchone()  # reads every block

        def cached() -> int:
            row = con.execute(
                "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() WHERE tag = 'BASE_TABLE'"
            ).fetchone()
            assert row is not None
            return int(row[0])

        assert cached() > 80 << 20
        limit = con.execute("SELECT current_setting('memory_limit')").fetchone()
        release_cache(con)
        assert cached() <= 48 << 20  # CACHE_FLOOR
        assert con.execute("SELECT current_setting('memory_limit')").fetchone() == limit
