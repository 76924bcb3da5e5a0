"""Usage that is not a count: a boolean, a fraction, a string, a negative number, a number beyond 64 bits
(alone or as a sum). The call is kept with its raw usage and flagged `invalid` (never a target, never an
overflow); every other call, session and file of the ingest is stored as it would be without it. The
same for every agent layout that records usage, and for Dexto's logged estimate pairs."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from faults.kit import counts, json_of, run_calib, session_files, tree_hashes

import calib
from calib.store.store import Store
from calib.synth import write_sample

# layout -> (agent, the key of the object holding a call's usage, its input and output fields)
LAYOUTS: dict[str, tuple[str, str, str, str]] = {
    "gemini-jsonl": ("gemini-cli", "tokens", "input", "output"),
    "gemini-json-parts": ("gemini-cli", "tokens", "input", "output"),
    "gemini-json-string": ("gemini-cli", "tokens", "input", "output"),
    "claude-code-jsonl": ("claude-code", "usage", "input_tokens", "output_tokens"),
    "codex-jsonl": ("codex", "last_token_usage", "input_tokens", "output_tokens"),
    "opencode-db": ("opencode", "tokens", "input", "output"),
    "opencode2-db": ("opencode", "tokens", "input", "output"),
    "opencode-json-tree": ("opencode", "tokens", "input", "output"),
    "opencode-project-tree": ("opencode", "tokens", "input", "output"),
    "opencode-export": ("opencode", "tokens", "input", "output"),
    "dexto-db": ("dexto", "tokenUsage", "inputTokens", "outputTokens"),
    "dexto-db-legacy": ("dexto", "tokenUsage", "inputTokens", "outputTokens"),
    "llxprt-chats": ("llxprt", "usage", "promptTokens", "completionTokens"),
}

# What each edited call's usage becomes: {field: value}, "input"/"output" standing for the layout's names.
BAD: dict[str, dict[str, Any]] = {
    "a boolean": {"input": True},
    "a fraction": {"input": 1.5},
    "a string": {"input": "12"},
    "a negative number": {"input": -3},
    "a number beyond 64 bits": {"input": 2**63},
    "two counts whose sum is beyond 64 bits": {"input": 2**62, "output": 2**62},
}
# A count written as a float with no fraction is still that count: the call stays as it was.
WHOLE_FLOAT = {"input": float}

Save = Callable[[Any], None]


# -- finding and editing one call's usage in any layout ----------------------------------------------


def _holders(value: Any, key: str, field: str) -> Iterator[dict[str, Any]]:
    """Every object under `key` in `value` whose `field` is a positive integer (a call's usage)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            held = item.get(key)
            if isinstance(held, dict) and type(held.get(field)) is int and held[field] > 0:
                yield held
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))


def _documents(root: Path) -> Iterator[tuple[Any, Save]]:
    """Every JSON document of a sample (database rows, JSONL lines, JSON files) with a way to write it back."""
    for db in sorted(root.rglob("*.db")):
        con = sqlite3.connect(db)
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for table, column in (
            ("part", "data"),
            ("message", "data"),
            ("session_message", "data"),
            ("list_store", "value"),
        ):
            if table not in tables:
                continue
            for rowid, data in con.execute(f"SELECT rowid, {column} FROM {table}").fetchall():

                def save(
                    doc: Any, db: Path = db, table: str = table, column: str = column, rowid: int = rowid
                ) -> None:
                    with closing(sqlite3.connect(db)) as write, write:
                        write.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (_text(doc), rowid))

                yield json.loads(data), save
        con.close()
    for path in sorted(root.rglob("*.json*")):
        if path.suffix == ".jsonl":
            lines = path.read_text().split("\n")
            for i, line in enumerate(lines):
                if line.strip():

                    def save_line(doc: Any, path: Path = path, lines: list[str] = lines, i: int = i) -> None:
                        lines[i] = _text(doc)
                        path.write_text("\n".join(lines))

                    yield json.loads(line), save_line
        elif path.suffix == ".json":
            yield json.loads(path.read_text()), lambda doc, path=path: path.write_text(_text(doc))


def _text(doc: Any) -> str:
    return json.dumps(doc, ensure_ascii=False)


def edit_usage(root: Path, layout: str, edits: dict[str, dict[str, Any]]) -> None:
    """Give distinct calls of the sample under `root` the usage `edits` names (every copy of each)."""
    _, key, input_field, output_field = LAYOUTS[layout]
    names = {"input": input_field, "output": output_field}

    def identity(held: dict[str, Any]) -> dict[str, Any]:
        # A call's usage as written while it streams differs only in its output count.
        return {k: v for k, v in held.items() if k != output_field}

    distinct: list[dict[str, Any]] = []
    for doc, _ in _documents(root):
        for held in _holders(doc, key, input_field):
            if identity(held) not in distinct:
                distinct.append(identity(held))
    assert len(distinct) > len(edits), f"the {layout} sample has too few calls with usage"
    targets = dict(zip(edits, distinct[1:], strict=False))
    for doc, save in list(_documents(root)):
        changed = False
        for held in _holders(doc, key, input_field):
            for name, target in targets.items():
                if identity(held) == target:
                    held.update(
                        {names[f]: v(held[names[f]]) if v is float else v for f, v in edits[name].items()}
                    )
                    changed = True
                    break
        if changed:
            save(doc)


# -- fixtures ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=list(LAYOUTS))
def layout_sample(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path, Path]:
    """(layout, three sessions written in it, the store those sessions make as they are)."""
    layout = str(request.param)
    base = tmp_path_factory.mktemp(layout)
    out = base / "data"
    write_sample(LAYOUTS[layout][0], out, layout=layout, sessions=3, seed=7)
    (out / "truth.json").unlink()
    db = base / "clean.duckdb"
    assert calib.ingest_sessions([out], db=db).ok
    return layout, out, db


def _calls(db: Path) -> dict[str, dict[str, Any]]:
    with Store(db, read_only=True) as store:
        frame = store.query(
            "SELECT call_uid, usage_status, input, output, reasoning, cache_read, cache_write, total, ctx, carry,"
            " usage_raw FROM calls"
        )
    return {r["call_uid"]: r for r in frame.to_dicts()}


def _holds(raw: str | None, field: str, value: Any) -> bool:
    """True when the stored raw usage has `field` set to `value` somewhere (types compared too)."""
    if raw is None:
        return False
    stack: list[Any] = [json.loads(raw)]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if field in item and type(item[field]) is type(value) and item[field] == value:
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


# -- the tests ---------------------------------------------------------------------------------------


def test_usage_that_is_not_a_count_flags_its_call_and_costs_nothing_else(
    layout_sample: tuple[str, Path, Path], gemini_source: Path, tmp_path: Path
) -> None:
    layout, clean, clean_db = layout_sample
    input_field = LAYOUTS[layout][2]
    data = tmp_path / "data"
    shutil.copytree(clean, data)
    edit_usage(data, layout, {**BAD, "a whole float": WHOLE_FLOAT})
    source = tree_hashes(data)
    db = tmp_path / "calib.duckdb"
    # A second source in the same ingest (four gemini-cli sessions) must land too.
    result = run_calib("ingest", data, gemini_source, "--db", db, "--json")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    doc = json_of(result)
    assert doc["errors"] == [] and doc["warnings"] == []
    assert counts(db)["sessions"] == counts(clean_db)["sessions"] + 4
    assert tree_hashes(data) == source  # read, never written

    calls, before = _calls(db), _calls(clean_db)
    mine = {uid: call for uid, call in calls.items() if uid in before}
    assert mine.keys() == before.keys()  # every call of the edited sessions is kept
    flagged = {uid for uid, call in mine.items() if call["usage_status"] == "invalid"}
    seen: set[str] = set()
    for name, edit in BAD.items():
        value = edit["input"]
        holding = [uid for uid, call in mine.items() if _holds(call["usage_raw"], input_field, value)]
        assert len(holding) == 1, (name, holding)
        call = mine[holding[0]]
        assert call["usage_status"] == "invalid", name
        # Never a target: no count, no context, nothing carried.
        counted = ("input", "output", "reasoning", "cache_read", "cache_write", "total")
        assert [call[c] for c in counted] == [None] * len(counted)
        assert call["ctx"] is None and call["carry"] is None
        seen.add(holding[0])
    assert flagged == seen  # only those
    # Every other call is stored exactly as before, the one whose count is a whole float among them.
    for uid in mine.keys() - seen:
        assert {k: v for k, v in mine[uid].items() if k != "usage_raw"} == {
            k: v for k, v in before[uid].items() if k != "usage_raw"
        }, uid


def test_a_dexto_estimate_beyond_64_bits_leaves_out_its_line(tmp_path: Path) -> None:
    out = tmp_path / "data"
    write_sample("dexto", out, layout="dexto-log", sessions=2, seed=4)
    (out / "truth.json").unlink()
    log = sorted(out.rglob("*.log"))[0]
    lines = log.read_text().split("\n")
    n = next(i for i, line in enumerate(lines) if "Context estimation accuracy" in line)
    entry = json.loads(lines[n])
    entry["message"] = entry["message"].replace("estimated=", "estimated=99999999999999999999", 1)
    lines[n] = json.dumps(entry)
    log.write_text("\n".join(lines))
    source = tree_hashes(out)
    db = tmp_path / "calib.duckdb"
    result = run_calib("ingest", out, "--db", db, "--json")
    assert result.returncode == 0, result.stderr
    message = (
        "this line is an estimate pair whose numbers are not token counts; "
        f"left out, the other pairs were imported ({log}:{n + 1})"
    )
    assert json_of(result)["warnings"] == [{"path": str(log), "line": n + 1, "message": message}]
    assert counts(db)["sessions"] == 2
    pairs = sum(log.read_text().count("Context estimation accuracy") for log in out.rglob("*.log"))
    assert counts(db)["agent_estimates"] == pairs - 1
    assert tree_hashes(out) == source


def test_raw_usage_nested_300_deep_is_stored_as_recorded(sessions: Path, tmp_path: Path) -> None:
    # orjson, which writes the store's JSON columns, refuses values nested more than 255 deep.
    log = session_files(sessions)[0]
    lines = log.read_text().split("\n")
    n = max(i for i, line in enumerate(lines) if '"tokens"' in line)  # the last version of its message
    record = json.loads(lines[n])
    deep = "[" * 300 + "]" * 300
    record["tokens"]["input"] = "@"
    lines[n] = json.dumps(record).replace('"@"', deep)
    log.write_text("\n".join(lines))
    source = tree_hashes(sessions)
    db = tmp_path / "calib.duckdb"
    result = run_calib("ingest", sessions, "--db", db, "--json")
    assert result.returncode == 0, result.stderr
    assert json_of(result)["errors"] == [] and json_of(result)["warnings"] == []
    assert counts(db)["sessions"] == 4
    invalid = [c for c in _calls(db).values() if c["usage_status"] == "invalid"]
    assert len(invalid) == 1 and json.loads(invalid[0]["usage_raw"])["input"] == json.loads(deep)
    assert tree_hashes(sessions) == source
