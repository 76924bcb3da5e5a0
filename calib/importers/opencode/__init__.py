"""The OpenCode importer: the SQLite database, the JSON storage trees and `opencode export` files.

Layouts (reference/formats.md section 2.2), each yielding one `ParsedSession` per OpenCode session:

- `opencode-db`: `opencode.db` / `opencode-<channel>.db` (OpenCode 1.1.53+), tables `session`, `message` and
  `part` whose `data` JSON lacks the ids kept in columns. Opened strictly read-only
  (`_sqlite.connect_readonly`): `mode=ro`, and also `immutable=1` when no `-wal`/`-journal` file exists,
  because a read-only open of a WAL database would otherwise create `-wal`/`-shm` files beside it. All
  reads run in one read transaction, so a database OpenCode is writing is read as one consistent snapshot.
- `opencode-json-tree`: `<data>/storage/` with `session/<projectID>/<ses>.json`, `message/<ses>/<msg>.json`,
  `part/<msg>/<prt>.json` (mid-2025 to the SQLite switch); read as one folder source.
- `opencode-project-tree`: the earliest `<data>/project/<slug>/storage/session/{info,message,part}` tree,
  with MessageV1 messages (inline parts, usage in `metadata.assistant.tokens`) or MessageV2 ones.
- `opencode-export`: `opencode export <id>` output, `{info, messages: [{info, parts}]}`.

Schema check (database): calib needs the columns it reads, `message(id, session_id, time_created, data)`
and `part(id, message_id, session_id, data)`; a database lacking any of them, or keeping its messages
only in the newer `session_message` table, is rejected with an `InputError` naming what differs and the
database's newest drizzle migration. The drizzle migration list itself is not a signal: every OpenCode
release and fork adds migrations that leave these tables alone.

How messages become calls and parts is in `calib.importers.opencode.build`.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from calib.core.errors import InputError
from calib.core.records import ParsedSession, Record, Session
from calib.importers.common import ms_to_datetime
from calib.importers.opencode.build import build_session, from_message_v1, load_json, message_sort_key, obj
from calib.importers.sqlite import SQLITE_MAGIC, column_names, connect_readonly, is_sqlite_file

TOOL = "opencode"
LAYOUTS = ("opencode-db", "opencode-json-tree", "opencode-project-tree", "opencode-export")
_DB_NAME = re.compile(r"^opencode(-[A-Za-z0-9._-]+)?\.db$")
_EXPORT_HEAD = re.compile(rb'\A\s*\{\s*"info"\s*:\s*\{')
# Columns calib reads; their absence means a schema calib does not know.
_REQUIRED = {
    "session": ("id",),
    "message": ("id", "session_id", "time_created", "data"),
    "part": ("id", "message_id", "session_id", "data"),
}
_DB_HINT = (
    "update calib, or export the sessions with `opencode export <sessionID> > file.json` and ingest those"
)

Info = dict[str, Any]
Messages = list[tuple[Info, list[dict[str, Any]]]]


class OpenCodeImporter:
    """Reads every OpenCode storage layout into sessions, one call per step."""

    name = TOOL

    def sniff_file(self, path: Path, head: bytes) -> bool:
        """An OpenCode database (by its tables) or an `opencode export` JSON file (by its first bytes)."""
        if head.startswith(SQLITE_MAGIC):
            return _is_opencode_db(path)
        return path.suffix == ".json" and _EXPORT_HEAD.match(head) is not None and b'"ses_' in head

    def sniff_dir(self, path: Path) -> bool:
        """A `storage` folder of the global JSON tree or of the earliest per-project tree."""
        return tree_layout(path) is not None

    def parse(self, path: Path) -> Iterator[Record]:
        """Parse a database, a storage folder or an export file."""
        if path.is_dir():
            layout = tree_layout(path)
            if layout == "opencode-json-tree":
                yield from _parse_json_tree(path)
            elif layout == "opencode-project-tree":
                yield from _parse_project_tree(path)
            else:
                raise InputError(
                    "not an OpenCode storage folder",
                    path=str(path),
                    hint="pass <data>/storage, <data>/project/<slug>/storage, a database or an export file",
                )
            return
        if is_sqlite_file(path):
            yield from _parse_db(path)
        else:
            yield from _parse_export(path)

    def default_paths(self) -> list[Path]:
        """`$XDG_DATA_HOME/opencode` (default `~/.local/share/opencode`) and `$OPENCODE_DB` if set."""
        data = data_dir()
        paths = [data]
        db = os.environ.get("OPENCODE_DB")
        if db and db != ":memory:":
            db_path = Path(db).expanduser()
            paths.append(db_path if db_path.is_absolute() else data / db_path)
        return paths


def data_dir() -> Path:
    """OpenCode's data folder (xdg-basedir, the same on Linux, macOS and Windows)."""
    base = os.environ.get("XDG_DATA_HOME")
    return (Path(base) if base else Path.home() / ".local" / "share") / "opencode"


# -- shared ------------------------------------------------------------------------------------------


def _load(path: str | Path) -> Any:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=str(path)) from exc
    try:
        return load_json(data)
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(
            f"not valid JSON: {str(exc).splitlines()[0]}",
            path=str(path),
            line=line if isinstance(line, int) else None,
            hint="OpenCode writes these files atomically, so the file is damaged; restore or delete it",
        ) from exc


def _load_object(path: str | Path, what: str) -> dict[str, Any]:
    value = _load(path)
    if not isinstance(value, dict):
        raise InputError(f"not an OpenCode {what}: expected a JSON object", path=str(path))
    return value


def _json_files(folder: str) -> list[str]:
    """The `*.json` files of a folder in name order, skipping OpenCode's `.oc-*.tmp` write files."""
    # Plain strings, not Path objects: a storage tree holds hundreds of thousands of small files.
    try:
        entries = os.scandir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    with entries:
        names = sorted(e.name for e in entries if e.name.endswith(".json") and not e.name.startswith("."))
    return [os.path.join(folder, name) for name in names]


def _stem(file: str) -> str:
    return os.path.basename(file)[: -len(".json")]


def _session(
    info: Info, source: Path, layout: str, messages: Messages, project: str | None = None
) -> ParsedSession:
    native = str(info.get("id"))
    uid = f"{TOOL}:{native}"
    times = obj(info.get("time"))
    parent = info.get("parentID")
    directory = info.get("directory") if isinstance(info.get("directory"), str) else None
    if not directory:
        directory = project or _cwd(messages)
    meta = {
        k: info[k]
        for k in ("slug", "projectID", "version", "agent", "model", "workspaceID")
        if info.get(k) is not None
    }
    # Session aggregates are unreliable (formats.md 2.3); kept for reference only.
    aggregates = {k: info[k] for k in ("cost", "tokens") if info.get(k) is not None}
    if aggregates:
        meta["aggregates"] = aggregates
    ended = ms_to_datetime(times.get("updated"))
    if ended is None and messages:
        ended = ms_to_datetime(obj(messages[-1][0].get("time")).get("created"))
    session = Session(
        uid=uid,
        tool=TOOL,
        native_id=native,
        source_path=str(source),
        layout=layout,
        project=directory,
        title=info.get("title") if isinstance(info.get("title"), str) else None,
        started_at=ms_to_datetime(times.get("created")),
        ended_at=ended,
        parent_uid=f"{TOOL}:{parent}" if isinstance(parent, str) and parent else None,
        is_subagent=isinstance(parent, str) and bool(parent),
        meta=meta or None,
    )
    return build_session(session, messages)


def _cwd(messages: Messages) -> str | None:
    for info, _ in messages:
        path = info.get("path")
        if isinstance(path, dict) and isinstance(path.get("cwd"), str) and path["cwd"]:
            return str(path["cwd"])
    return None


def _check_message(info: Any, where: str | Path, row: str | None = None) -> Info:
    if not isinstance(info, dict) or info.get("role") not in ("user", "assistant"):
        what = f"message {row} is not an OpenCode message" if row else "not an OpenCode message"
        raise InputError(f"{what} (no role user/assistant)", path=str(where))
    return info


# -- export ------------------------------------------------------------------------------------------


def _parse_export(path: Path) -> Iterator[ParsedSession]:
    doc = _load_object(path, "export")
    info, messages = doc.get("info"), doc.get("messages")
    if not isinstance(info, dict) or not isinstance(info.get("id"), str) or not isinstance(messages, list):
        raise InputError(
            "not an `opencode export` file: expected {info: {id, ...}, messages: [...]}", path=str(path)
        )
    pairs: Messages = []
    for index, entry in enumerate(messages):
        if not isinstance(entry, dict):
            raise InputError(f"messages[{index}] is not an object", path=str(path))
        msg = _check_message(entry.get("info"), path, f"messages[{index}]")
        parts = [p for p in entry.get("parts") or [] if isinstance(p, dict)]
        pairs.append((msg, parts))
    yield _session(info, path, "opencode-export", pairs)


# -- JSON trees --------------------------------------------------------------------------------------


def tree_layout(path: Path) -> str | None:
    """Which JSON tree a `storage` folder holds, or None."""
    if path.name != "storage":
        return None
    if (path / "session" / "info").is_dir() and (path / "session" / "message").is_dir():
        return "opencode-project-tree"
    if (path / "session").is_dir() and (path / "message").is_dir():
        return "opencode-json-tree"
    return None


def _parse_json_tree(root: Path) -> Iterator[ParsedSession]:
    base = str(root)
    message_root, part_root = os.path.join(base, "message"), os.path.join(base, "part")
    for project in sorted(p for p in (root / "session").iterdir() if p.is_dir()):
        for file in _json_files(str(project)):
            info = _load_object(file, "session")
            info.setdefault("id", _stem(file))
            session_id = str(info["id"])
            messages: Messages = []
            for msg_file in _json_files(os.path.join(message_root, session_id)):
                msg = _check_message(_load_object(msg_file, "message"), msg_file)
                msg.setdefault("id", _stem(msg_file))
                part_files = _json_files(os.path.join(part_root, str(msg["id"])))
                messages.append((msg, [_load_object(p, "part") for p in part_files]))
            messages.sort(key=lambda m: message_sort_key(m[0]))
            yield _session(info, root, "opencode-json-tree", messages)


def _parse_project_tree(root: Path) -> Iterator[ParsedSession]:
    # <data>/project/<slug>/storage: the slug stands in for the project until a message names its cwd.
    slug = root.parent.name
    session_root = os.path.join(str(root), "session")
    for file in _json_files(os.path.join(session_root, "info")):
        info = _load_object(file, "session")
        info.setdefault("id", _stem(file))
        session_id = str(info["id"])
        messages: Messages = []
        for msg_file in _json_files(os.path.join(session_root, "message", session_id)):
            raw = _load_object(msg_file, "message")
            if isinstance(raw.get("metadata"), dict) and isinstance(raw.get("parts"), list):
                msg, parts = from_message_v1(raw)
                _check_message(msg, msg_file)
            else:
                msg = _check_message(raw, msg_file)
                msg.setdefault("id", _stem(msg_file))
                part_dir = os.path.join(session_root, "part", session_id, str(msg["id"]))
                parts = [_load_object(p, "part") for p in _json_files(part_dir)]
            messages.append((msg, parts))
        messages.sort(key=lambda m: message_sort_key(m[0]))
        yield _session(info, root, "opencode-project-tree", messages, project=_cwd(messages) or slug)


# -- SQLite ------------------------------------------------------------------------------------------


def _is_opencode_db(path: Path) -> bool:
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
    # Named like OpenCode's database and made by its migrator: claim it so a newer schema gets a clear error.
    return bool(_DB_NAME.match(path.name)) and ("session" in columns or "__drizzle_migrations" in columns)


def _latest_migration(con: sqlite3.Connection, columns: dict[str, set[str]]) -> str | None:
    cols = columns.get("__drizzle_migrations")
    if not cols or "created_at" not in cols:
        return None
    row = con.execute("SELECT max(created_at) FROM __drizzle_migrations").fetchone()
    when = ms_to_datetime(row[0]) if row else None
    return when.strftime("%Y-%m-%d %H:%M:%S") if when else None


def _check_schema(path: Path, con: sqlite3.Connection, columns: dict[str, set[str]]) -> str | None:
    migration = _latest_migration(con, columns)
    version = f" (newest OpenCode migration {migration} UTC)" if migration else ""
    for table, needed in _REQUIRED.items():
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
    if "session_message" in columns and "session_id" in columns["session_message"]:
        row = con.execute(
            "SELECT count(*) FROM (SELECT DISTINCT session_id FROM session_message) sm "
            "WHERE NOT EXISTS (SELECT 1 FROM message m WHERE m.session_id = sm.session_id)"
        ).fetchone()
        if row and row[0]:
            raise InputError(
                f"OpenCode database keeps {row[0]} session(s) only in the newer `session_message` table, "
                f"which calib cannot read yet{version}",
                path=str(path),
                hint=_DB_HINT,
            )
    return migration


def _row_json(path: Path, table: str, row_id: str, data: Any) -> dict[str, Any]:
    try:
        value = load_json(data if isinstance(data, bytes | str) else b"")
    except ValueError as exc:
        raise InputError(
            f"row {row_id} of table `{table}` is not valid JSON: {str(exc).splitlines()[0]}", path=str(path)
        ) from exc
    if not isinstance(value, dict):
        raise InputError(f"row {row_id} of table `{table}` is not a JSON object", path=str(path))
    return value


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


def _parse_db(path: Path) -> Iterator[ParsedSession]:
    try:
        con = connect_readonly(path)
    except sqlite3.Error as exc:
        raise InputError(f"cannot open the OpenCode database: {exc}", path=str(path)) from exc
    try:
        # One read transaction: a consistent snapshot even while OpenCode writes.
        con.execute("BEGIN")
        columns = column_names(con)
        migration = _check_schema(path, con, columns)
        projects: dict[str, str] = {}
        if {"id", "worktree"} <= columns.get("project", set()):
            projects = {str(i): str(w) for i, w in con.execute("SELECT id, worktree FROM project")}
        order = "time_created, id" if "time_created" in columns["session"] else "id"
        cursor = con.execute(f"SELECT * FROM session ORDER BY {order}")
        names = [d[0] for d in cursor.description]
        sessions = [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
        for row in sessions:
            info = _db_session_info(row, projects)
            session_id = str(row["id"])
            parts_by_message: dict[str, list[dict[str, Any]]] = {}
            for part_id, message_id, data in con.execute(
                "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id",
                (session_id,),
            ):
                part = _row_json(path, "part", part_id, data)
                part.update(id=part_id, sessionID=session_id, messageID=message_id)
                parts_by_message.setdefault(message_id, []).append(part)
            messages: Messages = []
            for message_id, data in con.execute(
                "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id", (session_id,)
            ):
                msg = _row_json(path, "message", message_id, data)
                msg.update(id=message_id, sessionID=session_id)
                _check_message(msg, path, message_id)
                messages.append((msg, parts_by_message.get(message_id, [])))
            parsed = _session(info, path, "opencode-db", messages)
            if migration:
                parsed.session.meta = {**(parsed.session.meta or {}), "db_migration": migration}
            yield parsed
    except sqlite3.Error as exc:
        raise InputError(
            f"cannot read the OpenCode database: {exc}",
            path=str(path),
            hint="if OpenCode was migrating it, retry when it is done",
        ) from exc
    finally:
        con.close()


IMPORTER = OpenCodeImporter()
