"""A damaged file in OpenCode's JSON storage trees (the global `storage/` tree and the earliest per-project
tree) costs only what it holds: a part or message file its message, a session file its session, each with
one warning naming the file; every other session of the folder is imported, and no file is written."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from faults.kit import assert_same_rows, ingest_read_only, rows_by_uid, rows_without

import calib
from calib.synth import write_sample

JSON_TREE, PROJECT_TREE = "opencode-json-tree", "opencode-project-tree"
DEEP = b"[" * 100_000 + b"]" * 100_000  # far past orjson's 1,024 levels
REST = "the rest of the storage folder was imported"

Sample = Callable[[str], tuple[Path, Path]]


def _one_project(data: Path) -> None:
    """Every session of a per-project sample moved into the first project's storage folder (the sample
    writes one project per session), so that one folder holds them all."""
    first, *others = sorted(data.rglob("project/*/storage"))
    for storage in others:
        for kind in ("info", "message"):
            for entry in (storage / "session" / kind).iterdir():
                entry.rename(first / "session" / kind / entry.name)
        shutil.rmtree(storage.parent)


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    """layout -> (four sessions in one storage folder, written once; the store they make as they are)."""
    made: dict[str, tuple[Path, Path]] = {}

    def sample(layout: str) -> tuple[Path, Path]:
        if layout not in made:
            base = tmp_path_factory.mktemp(layout)
            write_sample("opencode", base / "data", layout=layout, sessions=4, seed=11)
            (base / "data" / "truth.json").unlink()
            if layout == PROJECT_TREE:
                _one_project(base / "data")
            db = base / "clean.duckdb"
            assert calib.ingest_sessions([base / "data"], db=db).ok
            made[layout] = base / "data", db
        return made[layout]

    return sample


def _copy(sample: Sample, layout: str, tmp_path: Path) -> tuple[Path, Path, dict[str, dict[str, object]]]:
    """A private copy of a sample, its storage folder and the rows of its clean store."""
    source, clean_db = sample(layout)
    data = tmp_path / "data"
    shutil.copytree(source, data)
    (storage,) = data.rglob("storage")
    return data, storage, rows_by_uid(clean_db)


def _sessions(storage: Path) -> list[Path]:
    """The session files of a storage folder, in name order."""
    return sorted((storage / "session").glob("*/ses_*.json"))


def _assistant_message(storage: Path, session: Path, layout: str) -> Path:
    """The message file of an assistant message in the middle of a session (not the first: its system
    prompt parts belong to the first call; not a compaction summary: it moves the history start)."""
    folder = storage / "message" if layout == JSON_TREE else storage / "session" / "message"
    files = sorted((folder / session.stem).glob("*.json"))
    messages = [(f, json.loads(f.read_bytes())) for f in files]
    assistants = [f for f, m in messages if m["role"] == "assistant" and not m.get("summary")]
    return assistants[len(assistants) // 2]


def _truncate(file: Path) -> bytes:
    """Cut the file in half (as a crash mid-write would leave it); the bytes left."""
    data = file.read_bytes()[: file.stat().st_size // 2]
    file.write_bytes(data)
    return data


def _json_error(data: bytes) -> tuple[str, int]:
    """What orjson says is wrong with `data`, and the line."""
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return exc.msg, exc.lineno
    raise AssertionError("parses")


def _damage(file: Path, how: str) -> tuple[str, int | None]:
    """Damage `file` as `how` says: what the warning says is wrong with it, and the line it names."""
    if how == "truncated":
        msg, line = _json_error(_truncate(file))
        return f"not valid JSON ({msg})", line
    if how == "cut after a line":
        data = file.read_bytes()
        data = data[: data.rindex(b"\n", 0, len(data) - 2) + 1]
        file.write_bytes(data)
        return f"not valid JSON ({_json_error(data)[0]})", data.count(b"\n")  # the last line, not the next
    if how == "empty":
        file.write_bytes(b"")
        return f"not valid JSON ({_json_error(b'')[0]})", None
    if how == "nested 100k deep":
        file.write_bytes(DEEP)
        return f"not valid JSON ({_json_error(DEEP)[0]})", 1
    if how == "not an object":
        file.write_text(json.dumps([json.loads(file.read_bytes())]))
        return "not a JSON object", None
    if how == "without a role":
        file.write_text(json.dumps({**json.loads(file.read_bytes()), "role": None}))
        return "not an OpenCode message (no role user/assistant)", None
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["truncated", "cut after a line", "not an object", "nested 100k deep"])
def test_a_damaged_part_file_costs_its_message(how: str, samples: Sample, tmp_path: Path) -> None:
    data, storage, clean = _copy(samples, JSON_TREE, tmp_path)
    message = _assistant_message(storage, _sessions(storage)[0], JSON_TREE)
    part = sorted((storage / "part" / message.stem).glob("*.json"))[1]
    what, line = _damage(part, how)
    doc, stored = ingest_read_only(data, tmp_path)
    text = f"this file is {what}; its message {message.stem} was left out, {REST}"
    where = f"{part}:{line}" if line else str(part)
    assert doc["warnings"] == [{"path": str(part), "line": line, "message": f"{text} ({where})"}]
    assert doc["errors"] == [] and doc["sessions"] == 4
    assert_same_rows(stored, rows_without(clean, message=message.stem))


def test_a_part_file_calib_cannot_read_costs_its_message(samples: Sample, tmp_path: Path) -> None:
    data, storage, clean = _copy(samples, JSON_TREE, tmp_path)
    message = _assistant_message(storage, _sessions(storage)[0], JSON_TREE)
    part = sorted((storage / "part" / message.stem).glob("*.json"))[1]
    # Valid JSON of a shape OpenCode never writes: a file part whose media type is a list.
    part.write_text(json.dumps({**json.loads(part.read_bytes()), "type": "file", "mime": ["text/x"]}))
    doc, stored = ingest_read_only(data, tmp_path)
    text = (
        "this file is a message calib cannot read (TypeError: unhashable type: 'list'); this message and "
        f"its parts were left out, {REST}"
    )
    assert doc["warnings"] == [{"path": str(message), "line": None, "message": f"{text} ({message})"}]
    assert doc["errors"] == [] and doc["sessions"] == 4
    assert_same_rows(stored, rows_without(clean, message=message.stem))


@pytest.mark.parametrize("layout", [JSON_TREE, PROJECT_TREE])
@pytest.mark.parametrize("how", ["truncated", "nested 100k deep", "without a role"])
def test_a_damaged_message_file_costs_that_message(
    layout: str, how: str, samples: Sample, tmp_path: Path
) -> None:
    data, storage, clean = _copy(samples, layout, tmp_path)
    message = _assistant_message(storage, _sessions(storage)[-1], layout)
    what, line = _damage(message, how)
    doc, stored = ingest_read_only(data, tmp_path)
    text = f"this file is {what}; this message and its parts were left out, {REST}"
    where = f"{message}:{line}" if line else str(message)
    assert doc["warnings"] == [{"path": str(message), "line": line, "message": f"{text} ({where})"}]
    assert doc["errors"] == [] and doc["sessions"] == 4
    assert_same_rows(stored, rows_without(clean, message=message.stem))


@pytest.mark.parametrize("layout", [JSON_TREE, PROJECT_TREE])
@pytest.mark.parametrize("how", ["truncated", "empty", "not an object"])
def test_a_damaged_session_file_costs_that_session(
    layout: str, how: str, samples: Sample, tmp_path: Path
) -> None:
    data, storage, clean = _copy(samples, layout, tmp_path)
    session = _sessions(storage)[1]
    what, line = _damage(session, how)
    doc, stored = ingest_read_only(data, tmp_path)
    text = f"this file is {what}; this session and its messages were left out, {REST}"
    where = f"{session}:{line}" if line else str(session)
    assert doc["warnings"] == [{"path": str(session), "line": line, "message": f"{text} ({where})"}]
    assert doc["errors"] == [] and doc["sessions"] == 3
    assert_same_rows(stored, rows_without(clean, session=f"opencode:{session.stem}"))
