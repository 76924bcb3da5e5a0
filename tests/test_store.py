from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from calib.errors import StoreError
from calib.records import Call, ParsedSession, Part, Session
from calib.store import Store, migrations


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
    broken.calls[1].uid = broken.calls[0].uid  # duplicate primary key
    with pytest.raises(duckdb.Error):
        store.write([broken])
    assert store.counts() == {"sessions": 1, "calls": 2, "parts": 4, "agent_estimates": 0}


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
