"""`opencode-db` and `opencode2-db`: `opencode.db` / `opencode-<channel>.db` (OpenCode 1.1.53+ and 2.x).

OpenCode 1.x keeps sessions in tables `session`, `message` and `part`, whose `data` JSON lacks the ids
kept in columns. OpenCode 2 writes `session_v2` + `session_message` into the same file and leaves the
1.x tables frozen, which any 1.x binary may still extend. Detection by tables (formats.md section 7.1):

- `session_v2` present: an OpenCode 2 database. Every `session_v2` session is read from `session_message`
  (in `seq` order; layout `opencode2-db`, `calib.importers.opencode.build_v2`), then every 1.x session
  whose id is not in `session_v2` (layout `opencode-db`). A session migrated to 2.x keeps its id, so it
  is read once, from the 2.x tables.
- else: a 1.x database. A `session_message` table there is the experimental 1.x projection, which may
  be empty or reset: it is not authoritative and is ignored.

Opened strictly read-only (`calib.importers.sqlite.connect_readonly`): `mode=ro`, and also
`immutable=1` when no `-wal`/`-journal` file exists, because a read-only open of a WAL database would
otherwise create `-wal`/`-shm` files beside it. All reads run in one read transaction, so a database
OpenCode is writing is read as one consistent snapshot.

Schema check: calib needs the columns it reads, `message(id, session_id, time_created, data)`,
`part(id, message_id, session_id, data)`, and in 2.x `session_v2(id)` and
`session_message(id, session_id, type, seq, data)`; a database lacking any of them is rejected with an
`InputError` naming what differs and the database's newest drizzle migration. The drizzle migration list
itself is not a signal: every OpenCode release and fork adds migrations that leave these tables alone.

Damaged rows cost their message: a `part`, `message` or `session_message` row whose data is not a JSON
object (not JSON, nested past orjson's 1,024 levels, or another JSON value), a message row without role
user or assistant, and a message whose records cannot be built (a field of a wrong type) are left out
with the message they belong to, each with a warning naming the database, the table and the row id
(`calib.importers.common.build_leaving_out`); every other message and session is imported.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from calib.core.errors import InputError, InputWarning
from calib.core.records import ParsedSession
from calib.importers.common import build_leaving_out, damaged_row, ms_to_datetime
from calib.importers.opencode.build import load_json
from calib.importers.opencode.build_v2 import Row, build_session_v2
from calib.importers.opencode.session import Info, Messages, parsed_session, session_record
from calib.importers.sqlite import column_names, connect_readonly

_DB_NAME = re.compile(r"^opencode(-[A-Za-z0-9._-]+)?\.db$")
# Columns calib reads; their absence means a schema calib does not know.
_REQUIRED_V2 = {
    "session_v2": ("id",),
    "session_message": ("id", "session_id", "type", "seq", "data"),
}
_REQUIRED = {
    "session": ("id",),
    "message": ("id", "session_id", "time_created", "data"),
    "part": ("id", "message_id", "session_id", "data"),
}
_REST = "the rest of the database was imported"
_LOST_MESSAGE = f"this message was left out, {_REST}"
_LOST_WITH_PARTS = f"this message and its parts were left out, {_REST}"
_DB_HINT = (
    "update calib, or export the sessions with `opencode export <sessionID> > file.json` and ingest those"
)


def is_opencode_db(path: Path) -> bool:
    """True for an OpenCode database (by its tables), or one named like it that its migrator made."""
    try:
        con = connect_readonly(path)
    except sqlite3.Error:
        return False
    try:
        columns = column_names(con)
    except sqlite3.Error:
        return False
    finally:
        con.close()
    part, message = columns.get("part", set()), columns.get("message", set())
    if "session" in columns and {"message_id", "session_id"} <= part and "session_id" in message:
        return True
    if "session_v2" in columns and {"session_id", "seq", "data"} <= columns.get("session_message", set()):
        return True
    # Named like OpenCode's database and made by its migrator: claim it so a newer schema gets a clear error.
    return bool(_DB_NAME.match(path.name)) and ("session" in columns or "__drizzle_migrations" in columns)


def _latest_migration(con: sqlite3.Connection, columns: dict[str, set[str]]) -> str | None:
    cols = columns.get("__drizzle_migrations")
    if not cols or "created_at" not in cols:
        return None
    row = con.execute("SELECT max(created_at) FROM __drizzle_migrations").fetchone()
    when = ms_to_datetime(row[0]) if row else None
    return when.strftime("%Y-%m-%d %H:%M:%S") if when else None


def _check_tables(
    path: Path, columns: dict[str, set[str]], required: dict[str, tuple[str, ...]], version: str
) -> None:
    for table, needed in required.items():
        if table not in columns:
            raise InputError(
                f"OpenCode database schema not known to calib: no table `{table}`{version}",
                path=str(path),
                hint=_DB_HINT,
            )
        missing = [c for c in needed if c not in columns[table]]
        if missing:
            raise InputError(
                f"OpenCode database schema not known to calib: table `{table}` has no column "
                f"{', '.join(missing)}{version}",
                path=str(path),
                hint=_DB_HINT,
            )


def _row_json(data: Any) -> dict[str, Any] | str:
    """A row's `data` as a JSON object, or what is wrong with it."""
    try:
        value = load_json(data if isinstance(data, bytes | str) else b"")
    except orjson.JSONDecodeError as exc:  # also what orjson says of JSON nested past 1,024 levels
        return f"not valid JSON ({exc.msg})"
    return value if isinstance(value, dict) else "not a JSON object"


def _db_session_info(row: dict[str, Any], projects: dict[str, str]) -> Info:
    info: Info = {
        "id": row["id"],
        "slug": row.get("slug"),
        "projectID": row.get("project_id"),
        "workspaceID": row.get("workspace_id"),
        "parentID": row.get("parent_id"),
        "directory": row.get("directory") or projects.get(str(row.get("project_id"))),
        "title": row.get("title"),
        "version": row.get("version"),
        "agent": row.get("agent"),
        "time": {"created": row.get("time_created"), "updated": row.get("time_updated")},
    }
    if "tokens_input" in row:
        info["cost"] = row.get("cost")
        info["tokens"] = {
            "input": row.get("tokens_input"),
            "output": row.get("tokens_output"),
            "reasoning": row.get("tokens_reasoning"),
            "cache": {"read": row.get("tokens_cache_read"), "write": row.get("tokens_cache_write")},
        }
    return info


def _session_rows(con: sqlite3.Connection, table: str, columns: set[str]) -> list[dict[str, Any]]:
    order = "time_created, id" if "time_created" in columns else "id"
    cursor = con.execute(f"SELECT * FROM {table} ORDER BY {order}")
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]


def _v1_session(
    path: Path, con: sqlite3.Connection, row: dict[str, Any], projects: dict[str, str]
) -> list[ParsedSession | InputWarning]:
    info = _db_session_info(row, projects)
    session_id = str(row["id"])
    parts_by_message: dict[str, list[dict[str, Any]]] = {}
    # A damaged row costs its message (a part row, the message it belongs to): one warning each.
    left_out: dict[str, InputWarning] = {}
    for part_id, message_id, data in con.execute(
        "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id", (session_id,)
    ):
        part = _row_json(data)
        if isinstance(part, str):
            lost = f"its message {message_id} was left out, {_REST}"
            left_out.setdefault(str(message_id), damaged_row(path, "part", str(part_id), part, lost))
            continue
        part.update(id=part_id, sessionID=session_id, messageID=message_id)
        parts_by_message.setdefault(message_id, []).append(part)
    messages: Messages = []
    for message_id, data in con.execute(
        "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id", (session_id,)
    ):
        if str(message_id) in left_out:
            continue
        msg = _row_json(data)
        if isinstance(msg, dict) and msg.get("role") not in ("user", "assistant"):
            msg = "not an OpenCode message (no role user/assistant)"
        if isinstance(msg, str):
            left_out[str(message_id)] = damaged_row(path, "message", str(message_id), msg, _LOST_WITH_PARTS)
            continue
        msg.update(id=message_id, sessionID=session_id)
        messages.append((msg, parts_by_message.get(message_id, [])))
    built = build_leaving_out(
        lambda kept: parsed_session(info, path, "opencode-db", kept),
        messages,
        damaged=lambda message, what: damaged_row(
            path, "message", str(message[0]["id"]), what, _LOST_WITH_PARTS
        ),
        path=path,
        session=session_id,
    )
    return [*left_out.values(), *built]


def _v2_session(
    path: Path, con: sqlite3.Connection, row: dict[str, Any], projects: dict[str, str], created: bool
) -> list[ParsedSession | InputWarning]:
    info = _db_session_info(row, projects)
    session = session_record(info, path, "opencode2-db", [])
    time_created = "time_created" if created else "NULL"
    rows: list[Row] = []
    out: list[ParsedSession | InputWarning] = []
    for message_id, kind, data, at in con.execute(
        f"SELECT id, type, data, {time_created} FROM session_message WHERE session_id = ? ORDER BY seq",
        (str(row["id"]),),
    ):
        value = _row_json(data)
        if isinstance(value, str):
            out.append(damaged_row(path, "session_message", str(message_id), value, _LOST_MESSAGE))
            continue
        rows.append((str(message_id), str(kind), value, at if isinstance(at, int) else None))
    return out + build_leaving_out(
        lambda kept: build_session_v2(session, kept),
        rows,
        damaged=lambda message, what: damaged_row(path, "session_message", message[0], what, _LOST_MESSAGE),
        path=path,
        session=str(row["id"]),
    )


def parse_db(path: Path) -> Iterator[ParsedSession | InputWarning]:
    """Every session of the database, each once (section 7.1's detection order), and a warning for each
    damaged row left out."""
    try:
        con = connect_readonly(path)
    except sqlite3.Error as exc:
        raise InputError(f"cannot open the OpenCode database: {exc}", path=str(path)) from exc
    try:
        # One read transaction: a consistent snapshot even while OpenCode writes.
        con.execute("BEGIN")
        columns = column_names(con)
        migration = _latest_migration(con, columns)
        version = f" (newest OpenCode migration {migration} UTC)" if migration else ""
        projects: dict[str, str] = {}
        if {"id", "worktree"} <= columns.get("project", set()):
            projects = {str(i): str(w) for i, w in con.execute("SELECT id, worktree FROM project")}
        seen: set[str] = set()
        v2 = "session_v2" in columns
        if v2:
            _check_tables(path, columns, _REQUIRED_V2, version)
            created = "time_created" in columns["session_message"]
            for row in _session_rows(con, "session_v2", columns["session_v2"]):
                seen.add(str(row["id"]))
                yield from _with_migration(_v2_session(path, con, row, projects, created), migration)
        # A 2.x database may hold no 1.x tables at all; a 1.x database must hold them all.
        if not v2 or any(table in columns for table in _REQUIRED):
            _check_tables(path, columns, _REQUIRED, version)
            for row in _session_rows(con, "session", columns["session"]):
                if str(row["id"]) not in seen:
                    yield from _with_migration(_v1_session(path, con, row, projects), migration)
    except sqlite3.Error as exc:
        raise InputError(
            f"cannot read the OpenCode database: {exc}",
            path=str(path),
            hint="if OpenCode was migrating it, retry when it is done",
        ) from exc
    finally:
        con.close()


def _with_migration(
    records: list[ParsedSession | InputWarning], migration: str | None
) -> list[ParsedSession | InputWarning]:
    for record in records:
        if migration and isinstance(record, ParsedSession):
            record.session.meta = {**(record.session.meta or {}), "db_migration": migration}
    return records
