from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from benchmarks.harness import find_ccusage
from helpers import shared_fixture

from calib.core.errors import InputError, InputWarning
from calib.core.records import ParsedSession
from calib.importers import HEAD_BYTES, Importer, get_importer, sniff_dir, sniff_file
from calib.importers.common import PRUNED_TEXT
from calib.importers.opencode import IMPORTER, connect_readonly
from calib.importers.opencode.build import COMPACTION_PROMPT, INTERRUPTED_TOOL
from calib.ingest.pipeline import find_sources, ingest
from calib.store.store import Store
from calib.synth import write_sample

SES = "ses_test0001"
T0 = 1_760_000_000_000  # 2025-10-09, epoch ms
NEW = 1_780_000_000_000  # 2026-05-28


# -- hand-written OpenCode data -----------------------------------------------------------------------


def tok(
    inp: int, out: int, reas: int = 0, read: int = 0, write: int = 0, total: bool = True
) -> dict[str, Any]:
    t: dict[str, Any] = {
        "input": inp,
        "output": out,
        "reasoning": reas,
        "cache": {"read": read, "write": write},
    }
    if total:
        t["total"] = inp + out + reas + read + write
    return t


def user(mid: str, at: int, *parts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    info = {"id": mid, "sessionID": SES, "role": "user", "time": {"created": at}, "agent": "build", **extra}
    return {"info": info, "parts": [{"id": f"prt_{mid}_{i}", **p} for i, p in enumerate(parts)]}


def assistant(
    mid: str,
    at: int,
    parent: str,
    *parts: dict[str, Any],
    tokens: dict[str, Any] | None = None,
    model: str = "m1",
    provider: str = "prov",
    **extra: Any,
) -> dict[str, Any]:
    info = {
        "id": mid,
        "sessionID": SES,
        "role": "assistant",
        "parentID": parent,
        "modelID": model,
        "providerID": provider,
        "mode": "build",
        "path": {"cwd": "/work/proj", "root": "/work/proj"},
        "cost": 0,
        "tokens": tokens or tok(0, 0),
        "time": {"created": at, "completed": at + 5},
        **extra,
    }
    return {"info": info, "parts": [{"id": f"prt_{mid}_{i:02d}", **p} for i, p in enumerate(parts)]}


def text(t: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": t, **extra}


def step(tokens: dict[str, Any] | None = None, reason: str = "stop") -> dict[str, Any]:
    if tokens is None:
        return {"type": "step-start"}
    return {"type": "step-finish", "reason": reason, "cost": 0, "tokens": tokens}


def tool(
    call_id: str, name: str, args: Any, output: str, status: str = "completed", **times: int
) -> dict[str, Any]:
    state: dict[str, Any] = {"status": status, "input": args, "time": {"start": T0, "end": T0 + 1, **times}}
    if status == "completed":
        state.update(output=output, title=name, metadata={})
    elif status == "error":
        state["error"] = output
    return {"type": "tool", "callID": call_id, "tool": name, "state": state}


def session_info(**extra: Any) -> dict[str, Any]:
    return {
        "id": SES,
        "slug": "calm-otter",
        "projectID": "abc123",
        "directory": "/work/proj",
        "title": "A test",
        "version": "1.2.3",
        "time": {"created": T0, "updated": T0 + 99_000},
        **extra,
    }


def write_export(tmp_path: Path, messages: list[dict[str, Any]], **info: Any) -> Path:
    path = tmp_path / f"{SES}.json"
    path.write_text(
        json.dumps({"info": session_info(**info), "messages": messages}, indent=2), encoding="utf-8"
    )
    return path


def parse_one(path: Path) -> ParsedSession:
    records = list(IMPORTER.parse(path))
    assert len(records) == 1
    record = records[0]
    assert isinstance(record, ParsedSession)
    return record


def prompt_texts(parsed: ParsedSession, k: int) -> list[str]:
    call = parsed.calls[k]
    return [p.text for p in parsed.parts if call.prompt_start <= p.seq < call.prompt_end]


# -- contract -----------------------------------------------------------------------------------------


def test_registered_and_follows_the_importer_protocol() -> None:
    importer = get_importer("opencode")
    assert importer is IMPORTER
    assert isinstance(importer, Importer)
    assert importer.name == "opencode"


def test_default_paths_follow_xdg_and_opencode_db(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("OPENCODE_DB", "custom.db")
    assert IMPORTER.default_paths() == [
        tmp_path / "xdg" / "opencode",
        tmp_path / "xdg" / "opencode" / "custom.db",
        tmp_path / "xdg" / "kilo" / "kilo.db",  # Kilo's CLI, an OpenCode fork
    ]
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("OPENCODE_DB", ":memory:")
    share = Path.home() / ".local" / "share"
    assert IMPORTER.default_paths() == [share / "opencode", share / "kilo" / "kilo.db"]


def test_kilos_cli_database_reads_as_opencodes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Kilo's CLI keeps OpenCode's tables in `kilo.db`: the database is claimed by its tables, not its name
    write_sample("opencode", tmp_path / "home", sessions=2, layout="opencode-db")
    (db,) = (tmp_path / "home").rglob("opencode.db")
    share = tmp_path / "user" / ".local" / "share"
    kilo = share / "kilo" / "kilo.db"
    kilo.parent.mkdir(parents=True)
    shutil.copyfile(db, kilo)
    assert IMPORTER.sniff_file(kilo, kilo.read_bytes()[:HEAD_BYTES])
    monkeypatch.setenv("XDG_DATA_HOME", str(share))
    assert kilo in IMPORTER.default_paths()
    sessions = [r for r in IMPORTER.parse(kilo) if isinstance(r, ParsedSession)]
    assert len(sessions) == 2 and {s.session.tool for s in sessions} == {"opencode"}
    # ccusage's `kilo` report reads the same file: the same token sums per session
    ccusage = find_ccusage()
    if ccusage is None:
        pytest.skip("ccusage not found: set $CALIB_CCUSAGE or put ccusage on PATH")
    run = subprocess.run(
        [ccusage, "kilo", "session", "--json", "--offline"],
        env={**os.environ, "HOME": str(tmp_path / "user"), "XDG_DATA_HOME": str(share), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    keys = ("inputTokens", "cacheReadTokens", "cacheCreationTokens", "outputTokens")
    theirs = {t["sessionId"]: tuple(t[k] for k in keys) for t in json.loads(run.stdout)["sessions"]}
    ours = {
        s.session.native_id: tuple(
            sum(getattr(c, f) or 0 for c in s.calls) for f in ("input", "cache_read", "cache_write", "output")
        )
        for s in sessions
    }
    assert theirs == ours


# -- steps, usage, parts ------------------------------------------------------------------------------


def test_multi_step_message_makes_one_call_per_step(tmp_path: Path) -> None:
    first, last = tok(100, 10, 5, read=900, write=50), tok(40, 20, 0, read=1100)
    path = write_export(
        tmp_path,
        [
            user("msg_01", T0, text("list files")),
            assistant(
                "msg_02",
                T0 + 10,
                "msg_01",
                step(),
                {"type": "reasoning", "text": "plan", "time": {"start": T0 + 11}},
                tool("call_1", "bash", {"command": "ls", "note": "café"}, "a.txt\nb.txt"),
                step(first, "tool-calls"),
                step(),
                text("two files", time={"start": T0 + 20}),
                step(last),
                tokens=last,  # message-level tokens are the last step's, not a sum
                finish="stop",
            ),
        ],
    )
    parsed = parse_one(path)
    assert [(p.role, p.kind, p.text) for p in parsed.parts] == [
        ("user", "user_text", "list files"),
        ("assistant", "reasoning", "plan"),
        ("assistant", "tool_call", '{"command":"ls","note":"café"}'),
        ("tool", "tool_result", "a.txt\nb.txt"),
        ("assistant", "assistant_text", "two files"),
    ]
    c0, c1 = parsed.calls
    assert (c0.input, c0.output, c0.reasoning, c0.cache_read, c0.cache_write) == (100, 10, 5, 900, 50)
    assert (c1.input, c1.output, c1.cache_read) == (40, 20, 1100)
    assert (c0.ctx, c1.ctx) == (100 + 900 + 50, 40 + 1100)
    # total == input+output+reasoning+cache: reasoning reported apart and re-sent to the same model.
    assert c0.carry == 10 + 5
    assert (c0.finish, c1.finish) == ("tool-calls", "stop")
    assert (c0.prompt_start, c0.prompt_end, c1.prompt_end) == (0, 1, 4)
    assert prompt_texts(parsed, 1)[-1] == "a.txt\nb.txt"
    assert parsed.parts[2].call_uid == c0.uid and parsed.parts[3].call_uid is None
    assert parsed.parts[4].call_uid == c1.uid
    assert c1.ts == datetime(2025, 10, 9, 8, 53, 20, 20000)  # the step's first part time
    assert parsed.session.project == "/work/proj" and parsed.session.layout == "opencode-export"


def test_reasoning_inside_output_or_a_model_change_is_not_carried(tmp_path: Path) -> None:
    inside = tok(10, 50, 30, read=100)
    inside["total"] = 10 + 50 + 100  # the provider's total counts reasoning inside output
    apart_no_total = tok(10, 5, 40, read=100, total=False)  # reasoning > output: cannot be inside it
    path = write_export(
        tmp_path,
        [
            user("msg_01", NEW, text("q")),
            assistant("msg_02", NEW + 1, "msg_01", step(), text("a"), step(inside), tokens=inside),
            assistant(
                "msg_03", NEW + 2, "msg_01", step(), text("b"), step(apart_no_total), tokens=apart_no_total
            ),
            assistant("msg_04", NEW + 3, "msg_01", step(), text("c"), step(apart_no_total), model="m2"),
        ],
    )
    calls = parse_one(path).calls
    assert calls[0].carry == 50
    assert calls[1].carry == 5  # next call uses another model: its reasoning is not re-sent
    assert calls[2].carry == 5 + 40
    assert [c.usage_status for c in calls] == ["ok", "ok", "ok"]


def test_pruned_tool_output_errors_and_interrupted_tools(tmp_path: Path) -> None:
    path = write_export(
        tmp_path,
        [
            user(
                "msg_01", T0, text("go"), text("hidden", ignored=True), text("synthetic note", synthetic=True)
            ),
            assistant(
                "msg_02",
                T0 + 1,
                "msg_01",
                step(),
                tool("c1", "read", {"p": 1}, "big output", compacted=T0 + 60_000),
                tool("c2", "bash", {"c": 2}, "command failed", status="error"),
                tool("c3", "bash", {"c": 3}, "", status="running"),
                step(tok(5, 5, read=10)),
            ),
        ],
    )
    parsed = parse_one(path)
    assert [p.text for p in parsed.parts if p.role == "user"] == ["go", "synthetic note"]
    results = [p for p in parsed.parts if p.kind == "tool_result"]
    assert [r.text for r in results] == ["big output", "command failed", INTERRUPTED_TOOL]
    assert results[0].pruned_at == datetime(2025, 10, 9, 8, 54, 20)
    assert results[0].pruned_text == PRUNED_TEXT
    assert results[1].pruned_at is None and results[1].pruned_text is None


def test_compaction_restarts_history_at_the_compaction_message(tmp_path: Path) -> None:
    path = write_export(
        tmp_path,
        [
            user("msg_01", NEW, text("first")),
            assistant("msg_02", NEW + 1, "msg_01", step(), text("one"), step(tok(100, 5))),
            user("msg_03", NEW + 2, {"type": "compaction", "auto": True}),
            assistant(
                "msg_04",
                NEW + 3,
                "msg_03",
                step(),
                text("summary of work"),
                step(tok(120, 30)),
                summary=True,
                mode="compaction",
                finish="stop",
            ),
            user("msg_05", NEW + 4, text("next")),
            assistant("msg_06", NEW + 5, "msg_05", step(), text("two"), step(tok(60, 5))),
        ],
    )
    parsed = parse_one(path)
    kinds = [(p.kind, p.text) for p in parsed.parts]
    assert kinds[2] == ("user_text", COMPACTION_PROMPT)
    assert kinds[3] == ("summary", "summary of work")
    summary_call, after = parsed.calls[1], parsed.calls[2]
    assert summary_call.prompt_start == 0 and prompt_texts(parsed, 1)[-1] == COMPACTION_PROMPT
    assert parsed.parts[3].call_uid == summary_call.uid
    assert prompt_texts(parsed, 2) == [COMPACTION_PROMPT, "summary of work", "next"]
    assert after.prompt_start == 2


def test_compaction_keeps_the_tail_and_ignores_failed_summaries(tmp_path: Path) -> None:
    path = write_export(
        tmp_path,
        [
            user("msg_01", NEW, text("old")),
            assistant("msg_02", NEW + 1, "msg_01", step(), text("a"), step(tok(10, 1))),
            user("msg_03", NEW + 2, text("kept tail")),
            assistant("msg_04", NEW + 3, "msg_03", step(), text("b"), step(tok(20, 1))),
            user("msg_05", NEW + 4, {"type": "compaction", "auto": True}),
            assistant("msg_06", NEW + 5, "msg_05", step(), summary=True, error={"name": "APIError"}),
            user("msg_07", NEW + 6, {"type": "compaction", "auto": True, "tail_start_id": "msg_03"}),
            assistant("msg_08", NEW + 7, "msg_07", step(), text("sum"), step(tok(30, 2)), summary=True),
            user("msg_09", NEW + 8, text("new")),
            assistant("msg_10", NEW + 9, "msg_09", step(), text("c"), step(tok(40, 1))),
        ],
    )
    parsed = parse_one(path)
    failed = parsed.calls[2]
    assert failed.usage_status == "missing" and failed.error == "APIError"
    assert parsed.calls[3].prompt_start == 0  # the failed summary did not restart history
    assert prompt_texts(parsed, 4) == ["kept tail", "b", COMPACTION_PROMPT, COMPACTION_PROMPT, "sum", "new"]


def test_system_prompts_become_system_parts_once(tmp_path: Path) -> None:
    header, env1, env2 = "You are opencode.", "<env>day 1</env>", "<env>day 2</env>"
    path = write_export(
        tmp_path,
        [
            user("msg_01", T0, text("pwd")),
            assistant("msg_02", T0 + 1, "msg_01", step(), text("/"), step(tok(9, 1)), system=[header, env1]),
            user("msg_03", T0 + 2, text("again")),
            assistant("msg_04", T0 + 3, "msg_03", step(), text("/"), step(tok(19, 1)), system=[header, env1]),
            user("msg_05", T0 + 4, text("next day")),
            assistant("msg_06", T0 + 5, "msg_05", step(), text("/"), step(tok(29, 1)), system=[header, env2]),
        ],
    )
    parsed = parse_one(path)
    assert [(p.role, p.kind, p.text) for p in parsed.parts[:4]] == [
        ("system", "system", header),
        ("system", "system", env1),
        ("system", "system", env2),
        ("user", "user_text", "pwd"),
    ]
    assert sum(p.kind == "system" for p in parsed.parts) == 3
    assert [p.seq for p in parsed.parts] == list(range(len(parsed.parts)))
    assert prompt_texts(parsed, 0)[:2] == [header, env1]
    assert parsed.calls[2].prompt_end == len(parsed.parts) - 1


def test_errors_missing_usage_and_pre_fix_cache_accounting(tmp_path: Path) -> None:
    old_openai = tok(9640, 12, 266, read=9600, total=False)  # OpenCode <= 2025-11: input included cache reads
    path = write_export(
        tmp_path,
        [
            user("msg_01", T0, text("hi")),
            assistant(
                "msg_02",
                T0 + 1,
                "msg_01",
                step(),
                text("partial"),
                error={"name": "APIError", "data": {"message": "overloaded"}},
            ),
            assistant(
                "msg_03",
                T0 + 2,
                "msg_01",
                step(),
                text("ok"),
                step(old_openai),
                provider="opencode",
                model="grok-code",
            ),
            assistant(
                "msg_04",
                T0 + 3,
                "msg_01",
                step(),
                text("ok"),
                step(tok(9, 1, read=50, total=False)),
                provider="anthropic",
            ),
        ],
    )
    parsed = parse_one(path)
    errored, old, anthropic = parsed.calls
    assert (errored.usage_status, errored.error, errored.ctx, errored.carry) == (
        "missing",
        "overloaded",
        None,
        None,
    )
    assert [p.resent for p in parsed.parts if p.message_id == "msg_02"] == [False]
    assert old.usage_status == "suspect" and old.ctx == 9640 + 9600
    assert anthropic.usage_status == "ok"


# -- the earliest per-project tree (MessageV1) ------------------------------------------------------


def write_project_tree(tmp_path: Path) -> Path:
    storage = tmp_path / "project" / "home-me-app" / "storage"
    (storage / "session" / "info").mkdir(parents=True)
    (storage / "session" / "info" / f"{SES}.json").write_text(
        json.dumps({"id": SES, "title": "v0", "version": "0.1.1", "time": {"created": T0, "updated": T0 + 9}})
    )
    msgs = storage / "session" / "message" / SES
    msgs.mkdir(parents=True)
    v1_user = {
        "id": "msg_01",
        "role": "user",
        "parts": [{"type": "text", "text": "read it"}],
        "metadata": {"time": {"created": T0}, "sessionID": SES, "tool": {}},
    }
    v1_assistant = {
        "id": "msg_02",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {"type": "text", "text": "reading"},
            {
                "type": "tool-invocation",
                "toolInvocation": {
                    "state": "result",
                    "toolCallId": "t1",
                    "toolName": "read",
                    "args": {"path": "x"},
                    "result": "contents",
                },
            },
            {"type": "step-start"},
            {"type": "text", "text": "done"},
        ],
        "metadata": {
            "time": {"created": T0 + 1, "completed": T0 + 2},
            "sessionID": SES,
            "tool": {"t1": {"title": "read", "time": {"start": T0 + 1, "end": T0 + 2}}},
            "assistant": {
                "system": ["sys prompt"],
                "modelID": "claude-sonnet-4",
                "providerID": "anthropic",
                "path": {"cwd": "/home/me/app", "root": "/home/me/app"},
                "cost": 0.1,
                "tokens": {"input": 5, "output": 7, "reasoning": 0, "cache": {"read": 3000, "write": 200}},
            },
        },
    }
    (msgs / "msg_01.json").write_text(json.dumps(v1_user))
    (msgs / "msg_02.json").write_text(json.dumps(v1_assistant))
    return storage


def test_project_tree_message_v1_is_one_call_per_message(tmp_path: Path) -> None:
    storage = write_project_tree(tmp_path)
    assert IMPORTER.sniff_dir(storage) and sniff_dir(storage) is IMPORTER
    assert not IMPORTER.sniff_dir(storage.parent)
    parsed = parse_one(storage)
    assert parsed.session.layout == "opencode-project-tree"
    assert parsed.session.project == "/home/me/app"
    [call] = parsed.calls
    assert (call.ctx, call.carry, call.provider, call.model) == (
        5 + 3000 + 200,
        7,
        "anthropic",
        "claude-sonnet-4",
    )
    assert [(p.kind, p.text) for p in parsed.parts] == [
        ("system", "sys prompt"),
        ("user_text", "read it"),
        ("assistant_text", "reading"),
        ("tool_call", '{"path":"x"}'),
        ("assistant_text", "done"),
        ("tool_result", "contents"),
    ]


# -- the global JSON tree -----------------------------------------------------------------------------


def write_json_tree(tmp_path: Path, messages: list[dict[str, Any]]) -> Path:
    storage = tmp_path / "opencode" / "storage"
    (storage / "session" / "abc123").mkdir(parents=True)
    (storage / "session" / "abc123" / f"{SES}.json").write_text(
        json.dumps(session_info(parentID="ses_parent"))
    )
    for m in messages:
        info = m["info"]
        (storage / "message" / SES).mkdir(parents=True, exist_ok=True)
        (storage / "message" / SES / f"{info['id']}.json").write_text(json.dumps(info, indent=2))
        part_dir = storage / "part" / info["id"]
        part_dir.mkdir(parents=True, exist_ok=True)
        for p in m["parts"]:
            (part_dir / f"{p['id']}.json").write_text(
                json.dumps({**p, "messageID": info["id"], "sessionID": SES})
            )
    return storage


SIMPLE = [
    user("msg_01", NEW, text("hello")),
    assistant("msg_02", NEW + 1, "msg_01", step(), text("hi"), step(tok(10, 2, read=100))),
]


def test_json_tree_is_one_folder_source(tmp_path: Path) -> None:
    storage = write_json_tree(tmp_path, SIMPLE)
    (storage / "part" / "msg_02" / ".oc-x.json.123.tmp").write_text("{partial")  # an in-flight atomic write
    sources, _, errors = find_sources([tmp_path])
    assert [(s.path, s.importer) for s in sources] == [(storage, IMPORTER)] and not errors
    parsed = parse_one(storage)
    assert parsed.session.layout == "opencode-json-tree"
    assert parsed.session.parent_uid == "opencode:ses_parent" and parsed.session.is_subagent
    assert [p.text for p in parsed.parts] == ["hello", "hi"]
    assert parsed.calls[0].ctx == 110


def test_a_corrupt_part_file_costs_its_message_with_a_warning_naming_it(tmp_path: Path) -> None:
    storage = write_json_tree(tmp_path, SIMPLE)
    bad = storage / "part" / "msg_02" / "prt_msg_02_01.json"
    bad.write_text('{"type": "text", "text": ')
    warning, parsed = IMPORTER.parse(storage)
    assert isinstance(warning, InputWarning) and (warning.path, warning.line) == (str(bad), 1)
    assert str(warning) == (
        "this file is not valid JSON (unexpected end of data); its message msg_02 was left out, "
        f"the rest of the storage folder was imported ({bad}:1)"
    )
    assert isinstance(parsed, ParsedSession)
    assert [p.text for p in parsed.parts] == ["hello"] and parsed.calls == []


def test_project_tree_message_v2_reads_its_part_folder(tmp_path: Path) -> None:
    storage = write_project_tree(tmp_path)
    later = assistant("msg_03", T0 + 5, "msg_02", step(), text("more"), step(tok(4, 2, read=3200)))
    (storage / "session" / "message" / SES / "msg_03.json").write_text(json.dumps(later["info"]))
    parts = storage / "session" / "part" / SES / "msg_03"
    parts.mkdir(parents=True)
    for part in later["parts"]:
        (parts / f"{part['id']}.json").write_text(json.dumps(part))
    parsed = parse_one(storage)
    assert [p.text for p in parsed.parts][-1] == "more"
    assert [c.message_id for c in parsed.calls] == ["msg_02", "msg_03"] and parsed.calls[1].ctx == 3204
    (parts / f"{later['parts'][1]['id']}.json").write_text("[]")
    warning, parsed = IMPORTER.parse(storage)
    assert str(warning) == (
        "this file is not a JSON object; its message msg_03 was left out, the rest of the storage folder "
        f"was imported ({parts / 'prt_msg_03_01.json'})"
    )
    assert isinstance(parsed, ParsedSession) and [c.message_id for c in parsed.calls] == ["msg_02"]


# -- SQLite -------------------------------------------------------------------------------------------


def make_db(path: Path, messages: list[dict[str, Any]], *, wal: bool = True) -> None:
    con = sqlite3.connect(path)
    if wal:
        con.execute("PRAGMA journal_mode = WAL")
    con.executescript(
        """
        CREATE TABLE __drizzle_migrations (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric);
        INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('h', 1769552633000);
        CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, slug text NOT NULL,
            directory text NOT NULL, title text NOT NULL, version text NOT NULL,
            time_created integer NOT NULL, time_updated integer NOT NULL);
        CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL,
            time_updated integer NOT NULL, data text NOT NULL);
        CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
            time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
        """
    )
    con.execute(
        "INSERT INTO session VALUES (?, 'abc123', NULL, 'calm', '/work/db', 'db title', '1.2.3', ?, ?)",
        (SES, NEW, NEW + 9),
    )
    insert_messages(con, messages)
    con.commit()
    con.close()


def insert_messages(con: sqlite3.Connection, messages: list[dict[str, Any]]) -> None:
    for m in messages:
        info = dict(m["info"])
        mid, at = info.pop("id"), info["time"]["created"]
        info.pop("sessionID")
        con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, SES, at, at, json.dumps(info)))
        for p in m["parts"]:
            data = {k: v for k, v in p.items() if k != "id"}
            con.execute(
                "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", (p["id"], mid, SES, at, at, json.dumps(data))
            )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def head(path: Path) -> bytes:
    return path.read_bytes()[:HEAD_BYTES]


def test_database_is_read_without_creating_files(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    make_db(db, SIMPLE)
    before = (sha256(db), sorted(os.listdir(tmp_path)))
    assert IMPORTER.sniff_file(db, head(db)) and sniff_file(db) is IMPORTER
    parsed = parse_one(db)
    assert (sha256(db), sorted(os.listdir(tmp_path))) == before == (before[0], ["opencode.db"])
    assert parsed.session.layout == "opencode-db" and parsed.session.project == "/work/db"
    assert parsed.session.title == "db title"
    assert [p.text for p in parsed.parts] == ["hello", "hi"]
    assert parsed.calls[0].ctx == 110
    assert (parsed.session.meta or {})["db_migration"] == "2026-01-27 22:23:53"


def test_wal_database_held_open_by_a_writer(tmp_path: Path, store: Store) -> None:
    db = tmp_path / "opencode.db"
    make_db(db, SIMPLE[:1])
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        # Keep committed pages in the -wal, as a running OpenCode does between checkpoints.
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute("BEGIN")
        insert_messages(writer, SIMPLE[1:])
        writer.execute("COMMIT")
        writer.execute("BEGIN")
        insert_messages(writer, [user("msg_99", NEW + 50, text("uncommitted"))])  # must not be seen
        assert Path(f"{db}-wal").exists()
        before = sha256(db)
        result = ingest([tmp_path], store=store)
        assert result.ok, result.errors
        assert (result.sessions, result.calls) == (1, 1)
        assert sha256(db) == before
        parts = store.parts()["text"].to_list()
        assert parts == ["hello", "hi"]
        writer.execute("ROLLBACK")
    finally:
        writer.close()


def test_newer_schema_database_is_a_clear_error(tmp_path: Path, store: Store) -> None:
    db = tmp_path / "opencode.db"
    make_db(db, SIMPLE, wal=False)
    con = sqlite3.connect(db)
    con.execute("ALTER TABLE part RENAME COLUMN data TO payload")
    con.execute("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('h2', 1790000000000)")
    con.commit()
    con.close()
    assert IMPORTER.sniff_file(db, head(db))
    result = ingest([db], store=store)
    [error] = result.errors
    message = str(error)
    assert isinstance(error, InputError) and str(db) in message and "\n" not in message
    assert "table `part` has no column data" in message and "2026-09-21" in message
    assert store.counts()["sessions"] == 0


def test_session_message_of_a_1x_database_is_an_ignored_projection(tmp_path: Path) -> None:
    # Without `session_v2`, `session_message` is 1.x's experimental projection (formats.md 7.1), not
    # OpenCode 2 data: calib reads the 1.x tables and never refuses the database for it.
    db = tmp_path / "opencode-dev.db"
    make_db(db, SIMPLE, wal=False)
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE session_message (id text PRIMARY KEY, session_id text, type text, data text)")
    con.execute("INSERT INTO session_message VALUES ('e1', ?, 'user', '{}')", ("ses_elsewhere",))
    con.commit()
    con.close()
    parsed = parse_one(db)
    assert parsed.session.layout == "opencode-db" and [p.text for p in parsed.parts] == ["hello", "hi"]


def test_unrelated_sqlite_and_json_are_not_claimed(tmp_path: Path) -> None:
    other = tmp_path / "chat.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE session (id text)")
    con.execute("CREATE TABLE message (id text, body text)")
    con.commit()
    con.close()
    assert not IMPORTER.sniff_file(other, head(other))
    plain = tmp_path / "notes.json"
    plain.write_text(json.dumps({"info": {"id": "x"}, "messages": []}))
    assert not IMPORTER.sniff_file(plain, head(plain))
    assert sorted(os.listdir(tmp_path)) == ["chat.db", "notes.json"]


def test_readonly_connection_cannot_write(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    make_db(db, SIMPLE)
    con = connect_readonly(db)
    try:
        with pytest.raises(sqlite3.OperationalError):
            con.execute("DELETE FROM message")
    finally:
        con.close()


# -- real data ----------------------------------------------------------------------------------------


@pytest.mark.realdata
def test_real_exports_are_found_from_the_project_folder(store: Store) -> None:
    root = shared_fixture("opencode", "DLToolKit")
    result = ingest([root], store=store)
    assert result.ok, result.errors
    assert (result.files, result.sessions, result.calls) == (4, 4, 9)
    calls = store.query("SELECT * FROM calls ORDER BY session_uid, seq")
    raw = [json.loads(r) for r in calls["usage_raw"].to_list()]
    expected = [
        t["tokens"]["input"] + t["tokens"]["cache"]["read"] + t["tokens"]["cache"]["write"] for t in raw
    ]
    assert calls["ctx"].to_list() == expected
    assert set(calls["usage_status"].to_list()) == {"ok"}
    assert set(store.sessions()["layout"].to_list()) == {"opencode-export"}


@pytest.mark.realdata
def test_api_log_is_not_a_session() -> None:
    log = shared_fixture("opencode", "toji_electron", "CONVO.md")
    assert sniff_file(log) is None
