"""A damaged row in an agent's SQLite database (OpenCode 1.x and 2.x, Dexto): data that is not JSON, is
nested too deep, or holds a wrong type costs its message, with one warning naming the database and the
row; every other message and session of the database is imported, and the database is never written.
The same for log lines nested deeper than a reader recurses."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson
import pytest
from faults.kit import assert_same_rows, counts, ingest_read_only, rows_by_uid, rows_without

import calib
from calib.synth import write_sample

DEEP = "[" * 5000 + "]" * 5000  # past orjson's 1,024 levels and Python's recursion limit


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], tuple[Path, Path]]:
    """layout -> (a database of four sessions written once, the store it makes as it is)."""
    made: dict[str, tuple[Path, Path]] = {}

    def sample(tool: str, layout: str) -> tuple[Path, Path]:
        if layout not in made:
            base = tmp_path_factory.mktemp(layout)
            write_sample(tool, base / "data", layout=layout, sessions=4, seed=11)
            (base / "data" / "truth.json").unlink()
            db = base / "clean.duckdb"
            assert calib.ingest_sessions([base / "data"], db=db).ok
            made[layout] = base / "data", db
        return made[layout]

    return sample


def _copy(source: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A private copy of a sample, and its database."""
    data = tmp_path / "data"
    shutil.copytree(source, data)
    return data, next(data.rglob("*.db"))


def _sql(db: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(db)) as con, con:
        return con.execute(sql, args).fetchall()


def _json_reason(data: str) -> str:
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return str(exc.msg)
    raise AssertionError("parses")


# -- OpenCode 1.x: tables session, message, part -----------------------------------------------------

OPENCODE_PART = {
    "not JSON": "{not json",
    "nested too deep": '{"type": "text", "text": "x", "deep": ' + DEEP + "}",
    "not a JSON object": '["text"]',
}


@pytest.mark.parametrize("damage", list(OPENCODE_PART))
def test_a_damaged_opencode_part_row_costs_its_message(
    damage: str, samples: Callable[[str, str], tuple[Path, Path]], tmp_path: Path
) -> None:
    source, clean_db = samples("opencode", "opencode-db")
    data, db = _copy(source, tmp_path)
    part_id, message_id = _sql(db, "SELECT id, message_id FROM part ORDER BY id LIMIT 1 OFFSET 20")[0]
    bad = OPENCODE_PART[damage]
    _sql(db, "UPDATE part SET data = ? WHERE id = ?", bad, part_id)
    doc, stored = ingest_read_only(data, tmp_path)
    what = "not a JSON object" if damage == "not a JSON object" else f"not valid JSON ({_json_reason(bad)})"
    message = (
        f"row {part_id} of table `part` is {what}; its message {message_id} was left out, "
        f"the rest of the database was imported ({db})"
    )
    assert doc["warnings"] == [{"path": str(db), "line": None, "message": message}]
    assert doc["errors"] == [] and doc["sessions"] == 4
    assert_same_rows(stored, rows_without(rows_by_uid(clean_db), message=message_id))


@pytest.mark.parametrize(
    ("damage", "what"),
    [
        (lambda row: {**row, "role": 5}, "not an OpenCode message (no role user/assistant)"),
        (lambda row: [row], "not a JSON object"),
    ],
    ids=["a role that is a number", "not a JSON object"],
)
def test_an_opencode_message_row_of_the_wrong_shape_costs_that_message(
    damage: Callable[[dict[str, Any]], Any],
    what: str,
    samples: Callable[[str, str], tuple[Path, Path]],
    tmp_path: Path,
) -> None:
    source, clean_db = samples("opencode", "opencode-db")
    data, db = _copy(source, tmp_path)
    message_id, row = _sql(
        db, "SELECT id, data FROM message WHERE data LIKE '%\"assistant\"%' ORDER BY id LIMIT 1 OFFSET 5"
    )[0]
    _sql(db, "UPDATE message SET data = ? WHERE id = ?", json.dumps(damage(json.loads(row))), message_id)
    doc, stored = ingest_read_only(data, tmp_path)
    message = (
        f"row {message_id} of table `message` is {what}; this message and its parts were left out, "
        f"the rest of the database was imported ({db})"
    )
    assert doc["warnings"] == [{"path": str(db), "line": None, "message": message}]
    assert doc["errors"] == [] and doc["sessions"] == 4
    assert_same_rows(stored, rows_without(rows_by_uid(clean_db), message=message_id))


# -- OpenCode 2.x: tables session_v2, session_message ------------------------------------------------


@pytest.mark.parametrize(
    ("damage", "what"),
    [
        ("{not json", "not valid JSON"),
        (DEEP, "not valid JSON"),
        ('{"content": 5}', "a message calib cannot read"),
    ],
    ids=["not JSON", "nested too deep", "content that is a number"],
)
def test_a_damaged_opencode2_message_row_costs_that_message(
    damage: str, what: str, samples: Callable[[str, str], tuple[Path, Path]], tmp_path: Path
) -> None:
    source, clean_db = samples("opencode", "opencode2-db")
    data, db = _copy(source, tmp_path)
    message_id, _, row = _sql(
        db, "SELECT id, type, data FROM session_message WHERE type = 'assistant' ORDER BY id LIMIT 1 OFFSET 3"
    )[0]
    if damage.startswith('{"content"'):
        damage = json.dumps({**json.loads(row), "content": 5})
    _sql(db, "UPDATE session_message SET data = ? WHERE id = ?", damage, message_id)
    doc, stored = ingest_read_only(data, tmp_path)
    (warning,) = doc["warnings"]
    assert warning["path"] == str(db) and warning["line"] is None
    assert warning["message"].startswith(f"row {message_id} of table `session_message` is {what} (")
    assert warning["message"].endswith(
        f"; this message was left out, the rest of the database was imported ({db})"
    )
    assert doc["errors"] == [] and doc["sessions"] == 4
    assert_same_rows(stored, rows_without(rows_by_uid(clean_db), message=message_id))


# -- Dexto: tables kv_store and list_store -----------------------------------------------------------


def _dexto_message(db: Path, offset: int, where: str = "1") -> tuple[int, str, int, dict[str, Any]]:
    rowid, key, sequence, value = _sql(
        db,
        f"SELECT rowid, key, sequence, value FROM list_store WHERE {where} ORDER BY key, sequence "
        f"LIMIT 1 OFFSET {offset}",
    )[0]
    return rowid, key, sequence, json.loads(value)


def test_a_dexto_message_row_that_is_not_json_costs_that_message(
    samples: Callable[[str, str], tuple[Path, Path]], tmp_path: Path
) -> None:
    source, clean_db = samples("dexto", "dexto-db")
    data, db = _copy(source, tmp_path)
    rowid, key, sequence, message = _dexto_message(db, 9, "value LIKE '%\"assistant\"%'")
    _sql(db, "UPDATE list_store SET value = ? WHERE rowid = ?", "{not json", rowid)
    doc, stored = ingest_read_only(data, tmp_path)
    message_text = (
        f"row {key} sequence {sequence} of table `list_store` is not valid JSON "
        f"({_json_reason('{not json')}); this message was left out, the rest of the database was imported ({db})"
    )
    assert doc["warnings"] == [{"path": str(db), "line": None, "message": message_text}]
    assert doc["errors"] == [] and doc["sessions"] == 4
    assert_same_rows(stored, rows_without(rows_by_uid(clean_db), message=message["id"]))


def test_a_dexto_message_of_the_wrong_shape_costs_that_message(
    samples: Callable[[str, str], tuple[Path, Path]], tmp_path: Path
) -> None:
    source, clean_db = samples("dexto", "dexto-db")
    data, db = _copy(source, tmp_path)
    rowid, key, sequence, message = _dexto_message(db, 5, "value LIKE '%toolCalls%'")
    _sql(
        db, "UPDATE list_store SET value = ? WHERE rowid = ?", json.dumps({**message, "toolCalls": 5}), rowid
    )
    doc, stored = ingest_read_only(data, tmp_path)
    (warning,) = doc["warnings"]
    assert warning["message"] == (
        f"row {key} sequence {sequence} of table `list_store` is a message calib cannot read "
        "(TypeError: 'int' object is not iterable); this message was left out, the rest of the database "
        f"was imported ({db})"
    )
    assert doc["errors"] == [] and doc["sessions"] == 4
    assert_same_rows(stored, rows_without(rows_by_uid(clean_db), message=message["id"]))


def test_a_dexto_tool_argument_nested_too_deep_is_imported_as_recorded(
    samples: Callable[[str, str], tuple[Path, Path]], tmp_path: Path
) -> None:
    source, clean_db = samples("dexto", "dexto-db")
    data, db = _copy(source, tmp_path)
    rowid, _, _, message = _dexto_message(db, 5, "value LIKE '%toolCalls%'")
    message["toolCalls"][0]["function"]["arguments"] = DEEP  # a string of JSON, parsed by calib
    _sql(db, "UPDATE list_store SET value = ? WHERE rowid = ?", json.dumps(message), rowid)
    doc, stored = ingest_read_only(data, tmp_path)
    assert doc["warnings"] == [] and doc["errors"] == [] and doc["sessions"] == 4
    clean = rows_by_uid(clean_db)
    changed = {u for u in clean["parts"] if stored["parts"][u] != clean["parts"][u]}
    assert [stored["parts"][u]["text"] for u in changed] == [DEEP]  # that argument, as Dexto sent it
    assert stored["calls"] == clean["calls"]


def test_a_dexto_session_row_that_is_not_json_costs_only_that_info(
    samples: Callable[[str, str], tuple[Path, Path]], tmp_path: Path
) -> None:
    source, clean_db = samples("dexto", "dexto-db")
    data, db = _copy(source, tmp_path)
    key = _sql(db, "SELECT key FROM kv_store WHERE key LIKE 'session:%' ORDER BY key LIMIT 1")[0][0]
    _sql(db, "UPDATE kv_store SET value = ? WHERE key = ?", DEEP, key)
    doc, stored = ingest_read_only(data, tmp_path)
    message = (
        f"row {key} of table `kv_store` is not valid JSON ({_json_reason(DEEP)}); the session was imported "
        f"without it ({db})"
    )
    assert doc["warnings"] == [{"path": str(db), "line": None, "message": message}]
    assert doc["errors"] == [] and doc["sessions"] == 4
    clean = rows_by_uid(clean_db)
    assert stored["calls"] == clean["calls"] and stored["parts"] == clean["parts"]


# -- the same class in log lines ---------------------------------------------------------------------


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini-cli"])
def test_a_tool_input_nested_past_the_recursion_limit_costs_nothing(agent: str, tmp_path: Path) -> None:
    # orjson parses up to 1,024 levels; writing 1,000 back as part text used to recurse out of the stack.
    data = tmp_path / "data"
    write_sample(agent, data, sessions=2, seed=2)
    (data / "truth.json").unlink()
    clean = tmp_path / "clean.duckdb"
    assert calib.ingest_sessions([data], db=clean).ok
    deep = "[" * 1000 + "]" * 1000
    log = sorted(data.rglob("*.jsonl"))[0]
    lines = log.read_text().split("\n")
    # From the last line back: gemini-cli rewrites a message, and its last version is the one kept.
    for i, line in reversed(list(enumerate(lines))):
        if agent == "claude-code" and '"tool_use"' in line:
            record = json.loads(line)
            tool = next(c for c in record["message"]["content"] if c.get("type") == "tool_use")
            tool["input"] = "@"
        elif agent == "codex" and '"function_call"' in line:
            record = json.loads(line)
            record["payload"]["arguments"] = json.dumps({"x": "@"})
        elif agent == "gemini-cli" and '"toolCalls":[{' in line.replace(" ", ""):
            record = json.loads(line)
            record["toolCalls"][0]["args"] = "@"
        else:
            continue
        lines[i] = json.dumps(record).replace('"@"', deep).replace('\\"@\\"', deep)
        break
    else:
        raise AssertionError("no tool call")
    log.write_text("\n".join(lines))
    doc, stored = ingest_read_only(data, tmp_path)
    assert doc["warnings"] == [] and doc["errors"] == []
    before = rows_by_uid(clean)
    assert (
        stored["calls"].keys() == before["calls"].keys() and stored["parts"].keys() == before["parts"].keys()
    )
    assert any(deep in part["text"] for part in stored["parts"].values())
    assert counts(tmp_path / "calib.duckdb")["sessions"] == 2
