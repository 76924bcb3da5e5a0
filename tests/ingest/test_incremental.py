"""Incremental ingest: unchanged sources are not read, logs are read on, rewrites replace, bad files fail alone."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import duckdb
import pytest

import calib.ingest.pipeline as ingest_module
import calib.ingest.sources as sources_module
import calib.ingest.workers as workers_module
from calib.core.errors import StoreError, UsageError
from calib.importers import gemini_cli as gemini
from calib.importers import get_importer
from calib.ingest.cache import manifest_path
from calib.ingest.pipeline import ingest
from calib.store.store import Store

HASH = "cd" * 32
META = {
    "sessionId": "7f1c2a9e-0000-4000-8000-000000000001",
    "projectHash": HASH,
    "startTime": "2026-05-01T10:00:00.000Z",
}


def _tokens(n: int) -> dict[str, int]:
    return {"input": n, "output": 7, "cached": 0, "thoughts": 3, "tool": 0, "total": n + 10}


def _user(mid: str, text: str) -> dict[str, Any]:
    return {"id": mid, "timestamp": "2026-05-01T10:00:01.000Z", "type": "user", "content": [{"text": text}]}


def _gemini(mid: str, n: int, tools: bool = False) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": mid,
        "timestamp": "2026-05-01T10:00:02.000Z",
        "type": "gemini",
        "content": f"answer {mid}",
        "thoughts": [
            {"subject": "Plan", "description": f"think {mid}", "timestamp": "2026-05-01T10:00:02.000Z"}
        ],
        "tokens": _tokens(n),
        "model": "gemini-2.5-pro",
    }
    if tools:
        message["toolCalls"] = [
            {
                "id": f"{mid}-t",
                "name": "read_file",
                "args": {"path": "a.py"},
                "result": [{"functionResponse": {"name": "read_file", "response": {"output": "print(1)"}}}],
            }
        ]
    return message


def _function_response(mid: str) -> dict[str, Any]:
    return {
        "id": mid,
        "timestamp": "2026-05-01T10:00:03.000Z",
        "type": "user",
        "content": [{"functionResponse": {"name": "read_file", "response": {"output": "print(1)"}}}],
    }


def _chats(root: Path) -> Path:
    chats = root / ".gemini" / "tmp" / HASH / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    return chats


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _append(path: Path, *records: dict[str, Any]) -> None:
    with path.open("a") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in records))


def _legacy(chats: Path, sid: str, n_calls: int) -> Path:
    messages = []
    for k in range(n_calls):
        messages += [_user(f"{sid}-u{k}", f"question {k}"), _gemini(f"{sid}-g{k}", 1000 + k)]
    record = {**META, "sessionId": sid, "messages": messages}
    path = chats / f"session-2026-05-01T10-00-{sid[:8]}.json"
    path.write_text(json.dumps(record, indent=2))
    return path


def _table(db: Path, table: str) -> list[tuple[Any, ...]]:
    """Every row of a table in a stable order (what a cold ingest must reproduce exactly)."""
    key = {"sessions": "session_uid", "calls": "call_uid", "parts": "part_uid"}[table]
    with Store(db, read_only=True) as store:
        return store.con.execute(f"SELECT * FROM {table} ORDER BY {key}").fetchall()


def _same_as_cold(root: Path, db: Path, tmp_path: Path) -> None:
    cold = tmp_path / "cold.duckdb"
    for suffix in ("", ".wal", ".ingest.json"):
        Path(f"{cold}{suffix}").unlink(missing_ok=True)
    result = ingest([root], db=cold)
    assert result.ok
    for table in ("sessions", "calls", "parts"):
        assert _table(db, table) == _table(cold, table), table


class _Counter:
    """Counts the sources handed to an importer's readers (wraps the registered importer)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[Path] = []
        importer = get_importer("gemini-cli")
        original = type(importer).parse_from

        def counted(this: Any, path: Path, offset: int, state: dict[str, Any] | None) -> Any:
            self.paths.append(path)
            return original(this, path, offset, state)

        monkeypatch.setattr(type(importer), "parse_from", counted)


def test_unchanged_run_reads_nothing_and_adds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chats = _chats(tmp_path / "data")
    for k in range(3):
        _legacy(chats, f"{k}{k}{k}{k}{k}{k}{k}{k}-aaaa", 2)
    db = tmp_path / "calib.duckdb"
    first = ingest([tmp_path / "data"], db=db, workers=1)
    assert (first.read, first.sessions, first.calls) == (3, 3, 6)
    counter = _Counter(monkeypatch)
    # With the record beside the store: the store is not even opened.
    monkeypatch.setattr(ingest_module, "open_store", lambda *a, **k: pytest.fail("opened the store"))
    again = ingest([tmp_path / "data"], db=db)
    assert (again.read, again.unchanged, again.sessions, again.calls, again.parts) == (0, 3, 0, 0, 0)
    assert counter.paths == []
    monkeypatch.undo()
    # Without it (deleted): the store's files table says the same, and still nothing is parsed.
    counter = _Counter(monkeypatch)
    Path(manifest_path(db)).unlink()
    again = ingest([tmp_path / "data"], db=db)
    assert (again.read, again.unchanged, again.parts) == (0, 3, 0)
    assert counter.paths == []
    forced = ingest([tmp_path / "data"], db=db, full=True)
    assert (forced.read, forced.sessions, forced.parts) == (3, 0, 0) and len(counter.paths) == 3


def test_record_beside_the_store_is_ignored_once_the_store_changes(tmp_path: Path) -> None:
    chats = _chats(tmp_path / "data")
    path = _legacy(chats, "11111111-aaaa", 2)
    db = tmp_path / "calib.duckdb"
    ingest([tmp_path / "data"], db=db)
    with Store(db) as store:  # another command writes the store
        store.con.execute("DELETE FROM files")
    result = ingest([tmp_path / "data"], db=db)
    assert result.read == 1 and result.unchanged == 0
    # A source changed without the store changing: read again too.
    path.write_text(path.read_text().replace("question 0", "question zero"))
    result = ingest([tmp_path / "data"], db=db)
    assert result.read == 1 and result.unchanged == 0


def _log_ingested(tmp_path: Path, records: list[dict[str, Any]]) -> tuple[Path, Path]:
    """A JSONL log of `records` under tmp_path/data, ingested once into tmp_path/calib.duckdb."""
    log = _chats(tmp_path / "data") / "session-2026-05-01T10-00-7f1c2a9e.jsonl"
    _write_jsonl(log, records)
    db = tmp_path / "calib.duckdb"
    ingest([tmp_path / "data"], db=db)
    return log, db


def test_appended_jsonl_messages_are_read_on_from_the_last_offset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chats = _chats(tmp_path / "data")
    other = _legacy(chats, "22222222-bbbb", 2)
    log = chats / "session-2026-05-01T10-00-7f1c2a9e.jsonl"
    _write_jsonl(
        log,
        [
            META,
            _user("u1", "hello"),
            _gemini("g1", 1000),
            {"$set": {"lastUpdated": "2026-05-01T10:00:05.000Z"}},
        ],
    )
    db = tmp_path / "calib.duckdb"
    assert ingest([tmp_path / "data"], db=db).read == 2

    _append(
        log, _user("u2", "more"), _gemini("g2", 1500), {"$set": {"lastUpdated": "2026-05-01T10:09:00.000Z"}}
    )
    counter = _Counter(monkeypatch)
    result = ingest([tmp_path / "data"], db=db)
    assert (result.read, result.resumed, result.unchanged) == (1, 1, 1)
    assert counter.paths == [log]
    assert (result.sessions, result.calls, result.parts) == (0, 1, 3)  # user text, reasoning, answer
    assert other not in counter.paths
    _same_as_cold(tmp_path / "data", db, tmp_path)
    with Store(db, read_only=True) as store:
        calls = store.calls().filter(store.calls()["session_uid"].str.contains("7f1c2a9e"))
        assert calls["delta"].to_list() == [None, 1500 - 1000 - 7]

    # And again from the new offset.
    _append(log, _user("u3", "last"), _gemini("g3", 1900))
    result = ingest([tmp_path / "data"], db=db)
    assert (result.read, result.resumed, result.calls) == (1, 1, 1)
    _same_as_cold(tmp_path / "data", db, tmp_path)


def test_log_stored_by_an_older_reader_is_read_whole_once(tmp_path: Path) -> None:
    log, db = _log_ingested(tmp_path, [META, _user("u1", "hello"), _gemini("g1", 1000)])
    # As an older calib stored it: resume state of version 1, part uids spelled another way.
    with Store(db) as store:
        store.con.execute("UPDATE files SET resume = json_merge_patch(resume, '{\"v\": 1}')")
        store.con.execute("UPDATE parts SET part_uid = session_uid || ':' || message_id || ':' || seq")
    _append(log, _user("u2", "more"), _gemini("g2", 1500))
    result = ingest([tmp_path / "data"], db=db)
    assert result.ok and (result.read, result.resumed) == (1, 0)
    _same_as_cold(tmp_path / "data", db, tmp_path)


@pytest.mark.parametrize(
    "appended",
    [
        pytest.param([_gemini("g1", 1200)], id="re-appended id"),
        pytest.param([{"$rewindTo": "g1"}, _user("u9", "again")], id="rewind"),
        pytest.param(
            [{"$set": {"messages": [_user("s1", "<state_snapshot>x</state_snapshot>")]}}], id="checkpoint"
        ),
        pytest.param([_function_response("r1"), _gemini("g2", 1500)], id="tool results as a user turn"),
        pytest.param([{"$set": {"sessionId": "another"}}], id="identity patch"),
    ],
)
def test_appends_that_change_stored_rows_read_the_file_whole(
    tmp_path: Path, appended: list[dict[str, Any]]
) -> None:
    log, db = _log_ingested(tmp_path, [META, _user("u1", "hello"), _gemini("g1", 1000, tools=True)])
    _append(log, *appended)
    result = ingest([tmp_path / "data"], db=db)
    assert result.ok and (result.read, result.resumed) == (1, 0)
    _same_as_cold(tmp_path / "data", db, tmp_path)


def test_unfinished_line_is_left_out_then_read_on(tmp_path: Path) -> None:
    log, db = _log_ingested(tmp_path, [META, _user("u1", "hello"), _gemini("g1", 1000)])
    with log.open("a") as fh:
        fh.write(json.dumps(_user("u2", "half"))[:20])  # gemini-cli is still writing this line
    result = ingest([tmp_path / "data"], db=db)
    assert (result.read, result.resumed, result.parts) == (1, 1, 0) and result.ok
    [warning] = result.warnings
    assert (warning.path, warning.line) == (str(log), 4) and "unfinished" in str(warning)
    with log.open("a") as fh:
        fh.write(json.dumps(_user("u2", "half"))[20:] + "\n")
    result = ingest([tmp_path / "data"], db=db)
    assert result.ok and (result.read, result.resumed, result.parts) == (1, 1, 1) and not result.warnings
    _same_as_cold(tmp_path / "data", db, tmp_path)


def test_rewritten_prefix_reads_the_file_whole(tmp_path: Path) -> None:
    log, db = _log_ingested(tmp_path, [META, _user("u1", "hello"), _gemini("g1", 1000)])
    # Same length, different earlier bytes, then a new message: not an append.
    text = log.read_text().replace("hello", "HELLO")
    log.write_text(text + json.dumps(_user("u2", "more")) + "\n")
    result = ingest([tmp_path / "data"], db=db)
    assert (result.read, result.resumed) == (1, 0)
    _same_as_cold(tmp_path / "data", db, tmp_path)
    with Store(db, read_only=True) as store:
        assert "HELLO" in store.parts()["text"].to_list()


def test_rewritten_file_replaces_its_sessions_and_drops_the_ones_it_lost(tmp_path: Path) -> None:
    chats = _chats(tmp_path / "data")
    log = chats / "session-2026-05-01T10-00-7f1c2a9e.jsonl"
    _write_jsonl(log, [META, _user("u1", "hello"), _gemini("g1", 1000), _gemini("g2", 1100)])
    keep = _legacy(chats, "33333333-cccc", 1)
    db = tmp_path / "calib.duckdb"
    ingest([tmp_path / "data"], db=db)
    old_uid = f"gemini-cli:{META['sessionId']}:{META['startTime']}"
    # The file now records another session (a new start time): the old one must go with its rows.
    _write_jsonl(
        log, [{**META, "startTime": "2026-05-02T09:00:00.000Z"}, _user("u1", "hi"), _gemini("g1", 900)]
    )
    result = ingest([tmp_path / "data"], db=db)
    assert result.ok and (result.read, result.sessions, result.calls) == (1, 1, 1)
    with Store(db, read_only=True) as store:
        uids = set(store.sessions()["session_uid"].to_list())
        assert old_uid not in uids and len(uids) == 2
        assert store.con.execute(
            "SELECT count(*) FROM calls WHERE session_uid = ?", [old_uid]
        ).fetchone() == (0,)
        assert store.con.execute(
            "SELECT count(*) FROM parts WHERE session_uid = ?", [old_uid]
        ).fetchone() == (0,)
    assert keep.exists()
    _same_as_cold(tmp_path / "data", db, tmp_path)


def test_session_still_held_by_another_file_is_not_dropped(tmp_path: Path) -> None:
    chats = _chats(tmp_path / "data")
    sid = META["sessionId"]
    legacy = _legacy(chats, sid, 1)  # the .json gemini-cli converts to .jsonl on resume
    legacy.write_text(legacy.read_text().replace('"2026-05-01T10:00:00.000Z"', json.dumps(META["startTime"])))
    log = chats / "session-2026-05-01T10-00-7f1c2a9e.jsonl"
    _write_jsonl(log, [META, _user(f"{sid}-u0", "question 0"), _gemini(f"{sid}-g0", 1000)])
    db = tmp_path / "calib.duckdb"
    ingest([tmp_path / "data"], db=db)
    # The legacy file is rewritten to hold something else; the session lives on in the .jsonl.
    _legacy(chats, "44444444-dddd", 1).rename(legacy)
    result = ingest([tmp_path / "data"], db=db)
    assert result.ok
    with Store(db, read_only=True) as store:
        assert f"gemini-cli:{sid}:{META['startTime']}" in store.sessions()["session_uid"].to_list()


def test_failing_file_in_a_batch_adds_nothing_and_the_others_land(tmp_path: Path) -> None:
    chats = _chats(tmp_path / "data")
    for k in range(4):
        _legacy(chats, f"5555555{k}-eeee", 2)
    bad = chats / "session-2026-05-01T10-00-badbadba.json"
    record = {
        **META,
        "sessionId": "badbadba-0000",
        "messages": [_user("x", "q"), {**_gemini("y", 5), "toolCalls": "many"}],
    }
    bad.write_text(json.dumps(record))
    db = tmp_path / "calib.duckdb"
    result = ingest([tmp_path / "data"], db=db, workers=1)
    assert [Path(e.path or "").name for e in result.errors] == [bad.name]
    assert (result.read, result.sessions, result.calls) == (4, 4, 8)
    assert not Path(manifest_path(db)).exists()  # the failed file is tried again next time
    again = ingest([tmp_path / "data"], db=db)
    assert (again.unchanged, len(again.errors), again.sessions) == (4, 1, 0)


def test_rows_the_store_rejects_fail_only_their_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chats = _chats(tmp_path / "data")
    paths = [_legacy(chats, f"6666666{k}-ffff", 1) for k in range(3)]
    original = type(gemini.IMPORTER).parse_from

    def duplicate_uids(self: Any, path: Path, offset: int, state: Any) -> Any:
        increment = original(self, path, offset, state)
        for record in increment.records:
            if "66666661" in record.session.uid:
                assert len(record.parts) >= 2
                record.parts[-1].uid = record.parts[0].uid  # two parts with one natural key
        return increment

    monkeypatch.setattr(type(gemini.IMPORTER), "parse_from", duplicate_uids)
    db = tmp_path / "calib.duckdb"
    result = ingest([tmp_path / "data"], db=db, workers=1)
    assert [Path(e.path or "").name for e in result.errors] == [paths[1].name]
    assert "share the uid" in str(result.errors[0])
    assert (result.sessions, result.calls) == (2, 2)


def _many_small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch per source, all in one transaction (as a large ingest writes)."""
    monkeypatch.setattr(ingest_module, "BATCH_BYTES", 1)
    monkeypatch.setattr(ingest_module, "TRANSACTION_BYTES", 1 << 40)


def test_duckdb_error_inside_a_long_transaction_fails_only_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chats = _chats(tmp_path / "data")
    paths = [_legacy(chats, f"8888888{k}-cccc", 2) for k in range(4)]
    _many_small_batches(monkeypatch)
    original = Store._write_batch
    began: list[bool] = []

    def null_session(self: Store, units: list[Any]) -> Any:
        began.append(self.in_transaction)
        counts = original(self, units)
        if any("88888882" in uid for u in units for uid in u.session_uids()):
            # A real constraint failure, after this batch's rows went in: DuckDB aborts the transaction.
            self.con.execute("INSERT INTO sessions (session_uid) VALUES (NULL)")
        return counts

    monkeypatch.setattr(Store, "_write_batch", null_session)
    db = tmp_path / "calib.duckdb"
    result = ingest([tmp_path / "data"], db=db, workers=1)
    # The transaction over batches was rolled back and everything written again batch by batch.
    assert began[0] is True and began[-1] is False
    assert [Path(e.path or "").name for e in result.errors] == [paths[2].name]
    assert "cannot store the rows" in str(result.errors[0])
    assert (result.read, result.sessions, result.calls, result.parts) == (4, 3, 6, 18)
    with Store(db, read_only=True) as store:
        assert store.counts()["sessions"] == 3
        assert len(store.file_states()) == 3  # the failed file is read again next time


def test_failed_commit_writes_its_sources_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chats = _chats(tmp_path / "data")
    for k in range(3):
        _legacy(chats, f"9999999{k}-dddd", 2)
    _many_small_batches(monkeypatch)
    original = Store.commit
    failed: list[int] = []

    def commit_once(self: Store) -> None:
        if not failed:
            failed.append(1)
            self.con.execute("ROLLBACK")
            self._transaction = False
            raise RuntimeError("disk full")
        original(self)

    monkeypatch.setattr(Store, "commit", commit_once)
    db = tmp_path / "calib.duckdb"
    result = ingest([tmp_path / "data"], db=db, workers=1)
    assert failed and result.ok
    assert (result.read, result.sessions, result.calls, result.parts) == (3, 3, 6, 18)
    _same_as_cold(tmp_path / "data", db, tmp_path)


def test_ingest_refuses_a_store_with_a_transaction_open(tmp_path: Path) -> None:
    chats = _chats(tmp_path / "data")
    _legacy(chats, "7777777c-bbbb", 1)
    with Store(tmp_path / "calib.duckdb") as store:
        store.begin()
        with pytest.raises(UsageError, match="transaction open"):
            ingest([tmp_path / "data"], store=store)
        store.rollback()
        assert ingest([tmp_path / "data"], store=store).sessions == 1


@pytest.mark.parametrize("workers", [1, 2])
def test_a_new_store_that_cannot_be_created_fails_without_hanging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    import threading

    chats = _chats(tmp_path / "data")
    for k in range(6):
        _legacy(chats, f"6666666{k}-abcd", 2)
    _many_small_batches(monkeypatch)
    monkeypatch.setattr(workers_module, "PARALLEL_MIN_BYTES", 0)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    raised: list[BaseException] = []

    def run() -> None:
        try:
            ingest([tmp_path / "data"], db=blocker / "calib.duckdb", workers=workers)
        except BaseException as exc:
            raised.append(exc)

    # The store is created by the writer while parsing runs: its failure must reach the caller.
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "ingest hung after the store could not be created"
    assert len(raised) == 1 and isinstance(raised[0], StoreError)
    assert "cannot open the store" in str(raised[0])


def _sqlite_with_wal(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("CREATE TABLE t (x)")
    con.commit()
    return con


def test_database_fingerprint_includes_its_wal(tmp_path: Path) -> None:
    db_file = tmp_path / "agent.db"
    con = _sqlite_with_wal(db_file)
    try:
        source = sources_module.Source(db_file, get_importer("dexto"))
        before = sources_module.file_state(source)
        main_stat = db_file.stat()
        con.execute("INSERT INTO t VALUES (1)")
        con.commit()  # lands in agent.db-wal only
        assert Path(f"{db_file}-wal").exists() and db_file.stat().st_size == main_stat.st_size
        after = sources_module.file_state(source)
        assert after.fingerprint != before.fingerprint
    finally:
        con.close()


def test_database_whose_wal_changed_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from calib.core.records import ParsedSession, Session

    db_file = tmp_path / "sessions.db"
    con = _sqlite_with_wal(db_file)
    reads: list[Path] = []

    class Fake:
        name = "dexto"

        def sniff_file(self, path: Path, head: bytes) -> bool:
            return path.suffix == ".db"

        def sniff_dir(self, path: Path) -> bool:
            return False

        def parse(self, path: Path) -> Any:
            reads.append(path)
            yield ParsedSession(Session(f"dexto:{len(reads)}", "dexto", "x", str(path), "dexto-db"))

        def default_paths(self) -> list[Path]:
            return []

    monkeypatch.setattr("calib.importers._LOADED", {"dexto": Fake()})
    monkeypatch.setattr("calib.importers.importer_names", lambda: ["dexto"])
    store = tmp_path / "calib.duckdb"
    try:
        assert ingest([db_file], db=store, format="dexto").read == 1
        assert ingest([db_file], db=store, format="dexto").read == 0
        con.execute("INSERT INTO t VALUES (2)")
        con.commit()
        result = ingest([db_file], db=store, format="dexto")
        assert result.read == 1 and len(reads) == 2
        with Store(store, read_only=True) as s:  # the session the file held before is gone
            assert s.sessions()["session_uid"].to_list() == ["dexto:2"]
    finally:
        con.close()


def test_parallel_and_inline_ingest_store_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chats = _chats(tmp_path / "data")
    for k in range(12):
        _legacy(chats, f"7777777{k:x}-aaaa", 3 + k)
    bad = chats / "session-2026-05-01T10-00-brokenxx.json"
    bad.write_text('{"sessionId": "x", "messages": [')
    monkeypatch.setattr(workers_module, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(ingest_module, "BATCH_BYTES", 4096)  # many batches, each its own transaction
    inline = ingest([tmp_path / "data"], db=tmp_path / "a.duckdb", workers=1)
    parallel = ingest([tmp_path / "data"], db=tmp_path / "b.duckdb", workers=2)
    assert inline.to_dict() == parallel.to_dict() and len(parallel.errors) == 1
    for table in ("sessions", "calls", "parts"):
        assert _table(tmp_path / "a.duckdb", table) == _table(tmp_path / "b.duckdb", table)


def test_ingest_into_an_open_store_gives_its_settings_back(tmp_path: Path) -> None:
    chats = _chats(tmp_path / "data")
    _legacy(chats, "7777777a-bbbb", 3)
    setting = "SELECT current_setting('threads'), current_setting('disabled_compression_methods')"
    with Store(tmp_path / "calib.duckdb") as store:
        store.con.execute("SET threads = 2")
        before = store.con.execute(setting).fetchone()
        result = ingest([tmp_path / "data"], store=store)
        assert result.calls == 3 and not result.errors
        # The writer's own settings (one thread, no FSST) end with the ingest, not with the store.
        assert store.con.execute(setting).fetchone() == before == (2, "")


def test_ingest_leaves_nothing_in_the_write_ahead_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Written out under the writer's settings, not later when the store closes under its own.
    chats = _chats(tmp_path / "data")
    _legacy(chats, "7777777a-bbbb", 3)
    db = tmp_path / "calib.duckdb"
    with Store(db) as store:
        assert ingest([tmp_path / "data"], store=store).calls == 3
        wal = Path(f"{db}.wal")
        assert not wal.exists() or wal.stat().st_size == 0

    def refuse(self: Store) -> None:
        raise duckdb.IOException("disk full")

    # The rows are committed before the checkpoint: one that fails leaves them in the log, stored.
    monkeypatch.setattr(Store, "checkpoint", refuse)
    _legacy(chats, "7777777b-bbbb", 2)
    result = ingest([tmp_path / "data"], db=db)
    assert result.ok and result.calls == 2
    with Store(db, read_only=True) as store:
        assert store.counts()["calls"] == 5


@pytest.mark.parametrize("flags", [["--json"], ["-q"], ["--json", "--quiet"]])
def test_quick_answer_prints_what_the_full_command_prints(
    tmp_path: Path, flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from typer.testing import CliRunner

    from calib.cli import _quick_ingest
    from calib.cli.app import app

    chats = _chats(tmp_path / "data")
    _legacy(chats, "88888888-aaaa", 2)
    (tmp_path / "data" / "notes.txt").write_text("not a session")
    db = tmp_path / "calib.duckdb"
    args = ["ingest", str(tmp_path / "data"), "--db", str(db), *flags]
    assert CliRunner().invoke(app, args).exit_code == 0
    Path(manifest_path(db)).unlink()
    full = CliRunner().invoke(app, args)  # nothing to do, found the slow way; writes the record again
    assert full.exit_code == 0
    assert ("1 unchanged" in full.stdout) != ('"unchanged": 1' in full.stdout)  # text or JSON
    assert _quick_ingest(args) == 0
    assert capsys.readouterr().out == full.stdout
    assert _quick_ingest([*args, "--full"]) is None  # anything else goes to the full command
    assert _quick_ingest(["ingest", "--db", str(db)]) is None  # default folders: full command


def test_a_parser_process_that_dies_fails_only_its_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chats = _chats(tmp_path / "data")
    paths = [_legacy(chats, f"9999999{k}-bbbb", 2) for k in range(6)]
    victim = paths[2]
    original = workers_module._parse_columns
    parent = os.getpid()

    def dies_on_victim(task: Any) -> Any:
        if task.path == victim and os.getpid() != parent:
            os._exit(9)  # as if the kernel killed the worker for memory
        return original(task)

    # Forked workers inherit the patched module (the pool pickles only the name of what it runs).
    monkeypatch.setattr(workers_module, "_parse_columns", dies_on_victim)
    monkeypatch.setattr(workers_module, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(workers_module, "CHUNK_BYTES", 1)  # one source per chunk
    result = ingest([tmp_path / "data"], db=tmp_path / "calib.duckdb", workers=2)
    assert [Path(e.path or "").name for e in result.errors] == [victim.name]
    assert "stopped unexpectedly" in str(result.errors[0])
    assert (result.read, result.sessions, result.calls) == (5, 5, 10)
