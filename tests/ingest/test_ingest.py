"""`calib ingest` end to end: the --json document, exit codes, and what bad input does (and does not) do."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from calib.cli.app import app
from calib.store.store import Store

PROJECT_HASH = "ab" * 32


def _session(sid: str, n_calls: int = 2) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for k in range(n_calls):
        ts = f"2026-03-01T10:0{k}:00.000Z"
        messages.append(
            {"id": f"{sid}-u{k}", "timestamp": ts, "type": "user", "content": [{"text": f"q{k}"}]}
        )
        tokens = {
            "input": 1000 + 100 * k,
            "output": 10,
            "cached": 0,
            "thoughts": 0,
            "tool": 0,
            "total": 1010 + 100 * k,
        }
        messages.append(
            {
                "id": f"{sid}-g{k}",
                "timestamp": ts,
                "type": "gemini",
                "content": f"a{k}",
                "thoughts": [],
                "tokens": tokens,
            }
            | {"model": "gemini-2.5-pro"}
        )
    return {
        "sessionId": sid,
        "projectHash": PROJECT_HASH,
        "startTime": "2026-03-01T10:00:00.000Z",
        "lastUpdated": "2026-03-01T10:05:00.000Z",
        "messages": messages,
    }


def _chats(root: Path) -> Path:
    chats = root / ".gemini" / "tmp" / PROJECT_HASH / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    return chats


def _write_json(chats: Path, sid: str, text: str | None = None) -> Path:
    path = chats / f"session-2026-03-01T10-00-{sid[:8]}.json"
    path.write_text(text if text is not None else json.dumps(_session(sid), indent=2))
    return path


def _write_jsonl(chats: Path, sid: str) -> Path:
    record = _session(sid, n_calls=3)
    meta = {k: v for k, v in record.items() if k != "messages"}
    lines = [json.dumps(meta)] + [json.dumps(m) for m in record["messages"]]
    path = chats / f"session-2026-03-01T11-00-{sid[:8]}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(*args: str | Path) -> tuple[int, dict[str, Any] | None, str]:
    result = CliRunner().invoke(app, ["ingest", *map(str, args)])
    document = json.loads(result.stdout) if "--json" in args and result.stdout.strip() else None
    return result.exit_code, document, result.stderr


def _counts(db: Path) -> dict[str, int]:
    with Store(db, read_only=True) as store:
        return store.counts()


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("Error:")]


def test_json_document_and_exit_0(tmp_path: Path) -> None:
    chats = _chats(tmp_path / "data")
    _write_json(chats, "11111111-aaaa")
    _write_jsonl(chats, "22222222-bbbb")
    db = tmp_path / "calib.duckdb"
    code, doc, stderr = _run(tmp_path / "data", "--db", db, "--json")
    assert code == 0 and stderr == ""
    assert doc is not None
    assert {"files", "sessions", "calls", "parts", "skipped", "errors"} <= set(doc)
    assert (doc["files"], doc["sessions"], doc["calls"], doc["parts"]) == (2, 2, 5, 10)
    assert doc["skipped"] == [] and doc["errors"] == []
    assert _counts(db)["calls"] == 5


def test_reingest_of_unchanged_files_adds_nothing(tmp_path: Path) -> None:
    chats = _chats(tmp_path / "data")
    _write_json(chats, "11111111-aaaa")
    db = tmp_path / "calib.duckdb"
    assert _run(tmp_path / "data", "--db", db, "--json")[0] == 0
    before = _counts(db)
    code, doc, _ = _run(tmp_path / "data", "--db", db, "--json")
    assert code == 0 and doc is not None
    assert (doc["sessions"], doc["calls"], doc["parts"], doc["unchanged"]) == (0, 0, 0, 1)
    code, doc, _ = _run(tmp_path / "data", "--db", db, "--json", "--full")
    assert code == 0 and doc is not None and (doc["sessions"], doc["calls"], doc["parts"]) == (0, 0, 0)
    assert _counts(db) == before


def test_exit_1_when_some_fail_and_the_others_still_import(tmp_path: Path) -> None:
    chats = _chats(tmp_path / "data")
    _write_json(chats, "11111111-aaaa")
    text = json.dumps(_session("33333333-cccc"), indent=2)
    truncated = _write_json(chats, "33333333-cccc", text[: len(text) // 2])
    corrupt = _write_jsonl(chats, "44444444-dddd")
    lines = corrupt.read_text().splitlines()
    lines[3] = lines[3][:-7]
    corrupt.write_text("\n".join(lines) + "\n")
    empty = _write_json(chats, "55555555-eeee", "")
    db = tmp_path / "calib.duckdb"

    code, doc, stderr = _run(tmp_path / "data", "--db", db, "--json")
    assert code == 1 and doc is not None
    # The JSONL log with a damaged line in the middle imports without that line (a warning).
    assert (doc["sessions"], doc["calls"]) == (2, 5)
    errors = {Path(e["path"]).name: e for e in doc["errors"]}
    assert set(errors) == {truncated.name, empty.name}
    [warning] = doc["warnings"]
    assert warning["path"] == str(corrupt) and warning["line"] == 4
    assert f"{corrupt}:4" in warning["message"]
    assert errors[truncated.name]["line"] is not None
    assert "empty file" in errors[empty.name]["message"] and errors[empty.name]["line"] is None
    for error in doc["errors"]:
        assert set(error) >= {"path", "line", "message"}
        assert "\n" not in error["message"] and error["path"] in error["message"]
    assert len(_error_lines(stderr)) == 2 and len(stderr.splitlines()) == 3
    assert _counts(db)["sessions"] == 2


def test_failed_file_adds_nothing_and_keeps_what_was_stored(tmp_path: Path) -> None:
    chats = _chats(tmp_path / "data")
    path = _write_jsonl(chats, "22222222-bbbb")
    db = tmp_path / "calib.duckdb"
    assert _run(path, "--db", db)[0] == 0
    before = _counts(db)
    lines = path.read_text().splitlines()  # a rewrite that went wrong: the metadata line is damaged
    path.write_text("\n".join([lines[0][:-9], *lines[1:]]) + "\n")
    code, doc, stderr = _run(path, "--db", db, "--json")
    assert code == 1 and doc is not None and doc["errors"][0]["line"] == 1
    assert (doc["sessions"], doc["calls"], doc["parts"]) == (0, 0, 0)
    assert _counts(db) == before
    assert _error_lines(stderr) == [f"Error: {doc['errors'][0]['message']}"]


def test_unknown_format_is_a_usage_error_listing_valid_names(tmp_path: Path) -> None:
    chats = _chats(tmp_path / "data")
    _write_json(chats, "11111111-aaaa")
    code, _, stderr = _run(tmp_path / "data", "--db", tmp_path / "calib.duckdb", "--format", "nope", "--json")
    assert code == 2
    assert len(_error_lines(stderr)) == 1 and "'nope'" in stderr and "gemini-cli" in stderr


def test_directory_of_unrelated_json_is_skipped_not_failed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "package.json").write_text(json.dumps({"name": "x", "version": "1.0.0"}))
    (data / "list.json").write_text(json.dumps([1, 2, 3]))
    (data / "notes.jsonl").write_text('{"a": 1}\n{"b": 2}\n')
    (data / "broken.json").write_text("{not json")
    db = tmp_path / "calib.duckdb"
    code, doc, stderr = _run(data, "--db", db, "--json")
    assert code == 0 and stderr == "" and doc is not None
    assert sorted(Path(p).name for p in doc["skipped"]) == [
        "broken.json",
        "list.json",
        "notes.jsonl",
        "package.json",
    ]
    assert doc["errors"] == [] and doc["files"] == 0
    assert _counts(db)["sessions"] == 0


@pytest.mark.parametrize("content", ['{"name": "x"}', ""])
def test_file_named_explicitly_that_is_not_a_session_is_an_error(tmp_path: Path, content: str) -> None:
    other = tmp_path / "config.json"
    other.write_text(content)
    db = tmp_path / "calib.duckdb"
    code, doc, stderr = _run(other, "--db", db, "--json")
    assert code == 1 and doc is not None
    assert [e["path"] for e in doc["errors"]] == [str(other)]
    assert "not a session" in doc["errors"][0]["message"]
    assert _error_lines(stderr) == [f"Error: {doc['errors'][0]['message']}"]


def test_explicit_truncated_session_reports_its_line(tmp_path: Path) -> None:
    text = json.dumps(_session("66666666-ffff"), indent=2)
    path = tmp_path / "exported.json"
    path.write_text(text[: len(text) - 40])
    code, doc, _ = _run(path, "--db", tmp_path / "calib.duckdb", "--json")
    assert code == 1 and doc is not None
    (error,) = doc["errors"]
    assert error["path"] == str(path) and error["line"] == text[: len(text) - 40].count("\n") + 1


def test_store_held_by_another_process(tmp_path: Path) -> None:
    chats = _chats(tmp_path / "data")
    _write_json(chats, "11111111-aaaa")
    db = tmp_path / "calib.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('ready', flush=True); sys.stdin.read()",
            str(db),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        code, doc, stderr = _run(tmp_path / "data", "--db", db, "--json")
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    assert code == 1 and doc is None
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and str(db) in lines[0] and "lock" in lines[0]
    assert _run(tmp_path / "data", "--db", db, "--json")[0] == 0  # fine once the other process is gone
