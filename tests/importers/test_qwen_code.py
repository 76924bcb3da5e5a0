"""The Qwen Code importer on small hand-written chat logs: every usage case, sniffing, paths, bad input."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from benchmarks.harness import find_ccusage

from calib.core.errors import InputError, InputWarning
from calib.core.records import ParsedSession
from calib.importers import HEAD_BYTES, get_importer, sniff_file
from calib.importers.claude_code import IMPORTER as CLAUDE
from calib.importers.qwen_code import IMPORTER, runtime_dir
from calib.importers.qwen_code.usage import call_usage, split_by_seventy
from calib.ingest.pipeline import ingest_sessions
from calib.store.store import Store
from calib.synth import write_sample

SID = "7a3c2f10-4b6e-4d2a-9c1e-0f5d8e2b6a41"
CWD = "/home/ana/src/ledger"


class Log:
    """A chat log built record by record, each the child of the one before."""

    def __init__(self, version: str = "0.18.1") -> None:
        self.version = version
        self.lines: list[dict[str, Any]] = []

    def add(self, kind: str, **fields: Any) -> str:
        uid = f"00000000-0000-4000-8000-{len(self.lines) + 1:012d}"
        line = {
            "uuid": uid,
            "parentUuid": self.lines[-1]["uuid"] if self.lines else None,
            "sessionId": SID,
            "timestamp": f"2026-06-01T10:00:{len(self.lines):02d}.000Z",
            "type": kind,
            "cwd": CWD,
            "version": self.version,
        }
        line.update(fields)
        self.lines.append(line)
        return uid

    def user(self, text: str) -> str:
        return self.add("user", message={"role": "user", "parts": [{"text": text}]})

    def event(self, auth: str = "qwen-oauth", **counts: int) -> str:
        ui = {"event.name": "qwen-code.api_response", "model": "coder-model", "auth_type": auth, **counts}
        return self.add("system", subtype="ui_telemetry", systemPayload={"uiEvent": ui})

    def answer(
        self, parts: list[dict[str, Any]], usage: dict[str, Any] | None, model: str = "coder-model"
    ) -> str:
        fields: dict[str, Any] = {"model": model, "message": {"role": "model", "parts": parts}}
        if usage is not None:
            fields["usageMetadata"] = usage
        return self.add("assistant", **fields)

    def result(self, call_id: str, name: str, response: dict[str, Any]) -> str:
        part = {"functionResponse": {"id": call_id, "name": name, "response": response}}
        return self.add("tool_result", message={"role": "user", "parts": [part]})

    def write(self, folder: Path, name: str = f"{SID}.jsonl") -> Path:
        path = folder / name
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines), encoding="utf-8")
        return path


def usage(prompt: int, cand: int, total: int, thoughts: int | None = None, cached: int = 0) -> dict[str, int]:
    out = {"promptTokenCount": prompt, "candidatesTokenCount": cand, "totalTokenCount": total}
    if thoughts is not None:
        out["thoughtsTokenCount"] = thoughts
    out["cachedContentTokenCount"] = cached
    return out


def parse(path: Path) -> tuple[ParsedSession, list[InputWarning]]:
    records = list(IMPORTER.parse(path))
    sessions = [r for r in records if isinstance(r, ParsedSession)]
    assert len(sessions) == 1
    return sessions[0], [r for r in records if isinstance(r, InputWarning)]


# -- usage semantics ---------------------------------------------------------------------------------


def test_openai_compatible_usage_folds_reasoning_into_candidates(tmp_path: Path) -> None:
    log = Log()
    log.user("List the ledgers")
    log.event(input_token_count=1200, output_token_count=70)
    log.answer(
        [
            {"text": "Check the folder first.", "thought": True},
            {"functionCall": {"id": "c1", "name": "ls", "args": {}}},
        ],
        usage(1200, 70, 1270, thoughts=25, cached=1024),
    )
    parsed, warnings = parse(log.write(tmp_path))
    (call,) = parsed.calls
    assert not warnings
    assert (call.usage_status, call.usage_style, call.provider) == ("ok", "openai", "qwen")
    assert (call.ctx, call.carry, call.cache_read, call.reasoning, call.total) == (1200, 45, 1024, 25, 1270)
    assert call.usage_raw == usage(1200, 70, 1270, thoughts=25, cached=1024)
    reasoning = parsed.parts[1]
    assert (reasoning.kind, reasoning.resent, reasoning.call_uid) == ("reasoning", False, call.uid)


def test_gemini_usage_keeps_thoughts_out_of_candidates(tmp_path: Path) -> None:
    log = Log()
    log.user("Sum the March entries")
    log.event(auth="gemini-api-key")
    log.answer(
        [{"text": "Adding.", "thought": True}, {"text": "It is 42."}],
        usage(900, 12, 942, thoughts=30),
        "gemini-2.5-pro",
    )
    parsed, _ = parse(log.write(tmp_path))
    (call,) = parsed.calls
    assert (call.usage_style, call.provider, call.ctx, call.carry) == ("gemini", "google", 900, 12)


def test_usage_without_thoughts_carries_the_candidates(tmp_path: Path) -> None:
    log = Log()
    log.user("hello")
    log.answer([{"text": "Hi."}], usage(500, 3, 503))  # no telemetry event: the model name decides
    parsed, _ = parse(log.write(tmp_path))
    (call,) = parsed.calls
    assert (call.usage_status, call.ctx, call.carry, call.provider) == ("ok", 500, 3, "qwen")


def test_a_seventy_thirty_split_made_up_from_a_total_is_never_scored(tmp_path: Path) -> None:
    log = Log()
    log.user("hello")
    log.answer([{"text": "Hi."}], usage(7001, 3000, 10001))  # Math.round(10001 * 0.7) = 7001
    log.user("again")
    log.answer([{"text": "Hi again."}], usage(7000, 2999, 9999))  # not the split: prompt would be 6999
    parsed, _ = parse(log.write(tmp_path))
    made_up, real = parsed.calls
    assert (made_up.usage_status, made_up.ctx, made_up.carry) == ("suspect", None, None)
    assert (made_up.input, made_up.output, made_up.total) == (7001, 3000, 10001)  # kept as recorded
    assert (real.usage_status, real.ctx) == ("ok", 7000)
    assert parsed.session.meta is not None and parsed.session.meta["made_up_usage_calls"] == 1


@pytest.mark.parametrize(
    ("prompt", "output", "total", "split"),
    [
        (7, 3, 10, True),
        (4, 1, 5, True),
        (3, 2, 5, False),
        (0, 0, 0, False),
        (700, 300, 1000, True),
        (31, 14, 45, True),  # 45 * 0.7 is 31.499999999999996 in floating point
        (32, 13, 45, False),
        (701, 299, 1000, False),
    ],
)
def test_split_by_seventy_is_math_round_of_seven_tenths(
    prompt: int, output: int, total: int, split: bool
) -> None:
    assert split_by_seventy(prompt, output, total) is split


def test_missing_zero_and_invalid_usage(tmp_path: Path) -> None:
    log = Log()
    log.user("one")
    log.answer([{"text": "a"}], None)
    log.user("two")
    log.answer([{"text": "b"}], usage(0, 0, 0))
    log.user("three")
    log.answer([{"text": "c"}], {"promptTokenCount": "12", "candidatesTokenCount": 1, "totalTokenCount": 13})
    parsed, _ = parse(log.write(tmp_path))
    assert [c.usage_status for c in parsed.calls] == ["missing", "missing", "invalid"]
    assert all(c.ctx is None and c.carry is None for c in parsed.calls)
    assert call_usage(None).status == "missing"


def test_each_call_is_counted_once_though_telemetry_repeats_it(tmp_path: Path) -> None:
    log = Log()
    log.user("Read the ledger")
    log.event(input_token_count=800, output_token_count=20)
    log.answer(
        [{"functionCall": {"id": "c1", "name": "read_file", "args": {"absolute_path": "/l.csv"}}}],
        usage(800, 20, 820),
    )
    log.add(
        "system", subtype="ui_telemetry", systemPayload={"uiEvent": {"event.name": "qwen-code.tool_call"}}
    )
    log.result("c1", "read_file", {"output": "date,amount\n"})
    log.event(input_token_count=850, output_token_count=5)
    log.answer([{"text": "Done."}], usage(850, 5, 855))
    parsed, _ = parse(log.write(tmp_path))
    assert [c.ctx for c in parsed.calls] == [800, 850]
    assert [(p.kind, p.text) for p in parsed.parts] == [
        ("user_text", "Read the ledger"),
        ("tool_call", '{"absolute_path":"/l.csv"}'),
        ("tool_result", "date,amount\n"),
        ("assistant_text", "Done."),
    ]
    second = parsed.calls[1]
    assert (second.prompt_start, second.prompt_end) == (0, 3)
    assert parsed.session.meta is not None and parsed.session.meta["api_response_events"] == 2


def test_tool_errors_and_other_responses(tmp_path: Path) -> None:
    log = Log()
    log.user("go")
    log.answer([{"functionCall": {"id": "a", "name": "ls", "args": {"path": "."}}}], usage(100, 5, 105))
    log.result("a", "ls", {"error": "Path must be absolute: ."})
    log.answer([{"functionCall": {"id": "b", "name": "ls", "args": {}}}], usage(130, 5, 135))
    log.result("b", "ls", {"output": "x", "extra": 1})
    parsed, _ = parse(log.write(tmp_path))
    results = [p.text for p in parsed.parts if p.kind == "tool_result"]
    assert results == ["Path must be absolute: .", '{"output":"x","extra":1}']
    assert {p.tool_name for p in parsed.parts if p.kind == "tool_result"} == {"ls"}


def test_compression_restarts_the_prompt_at_the_compressed_history(tmp_path: Path) -> None:
    log = Log()
    log.user("Fix the totals")
    log.answer([{"text": "Fixed."}], usage(5000, 10, 5010))
    history = [
        {"role": "user", "parts": [{"text": "<state_snapshot>totals fixed</state_snapshot>"}]},
        {"role": "model", "parts": [{"text": "Got it. Thanks for the additional context!"}]},
    ]
    info = {"originalTokenCount": 5010, "newTokenCount": 40, "compressionStatus": 1}
    log.add("system", subtype="chat_compression", systemPayload={"info": info, "compressedHistory": history})
    log.user("Now the taxes")
    log.answer([{"text": "On it."}], usage(300, 4, 304))
    parsed, _ = parse(log.write(tmp_path))
    kinds = [(p.kind, p.call_uid is None) for p in parsed.parts]
    assert kinds == [
        ("user_text", True),
        ("assistant_text", False),
        ("summary", True),
        ("assistant_text", True),  # the acknowledgement: framing sent as input, produced by no call
        ("user_text", True),
        ("assistant_text", False),
    ]
    after = parsed.calls[1]
    assert (after.prompt_start, after.prompt_end) == (2, 5)
    assert parsed.session.meta is not None
    assert parsed.session.meta["compactions"] == [{"at_call": 1, "original_tokens": 5010, "new_tokens": 40}]


def test_compression_inside_a_tool_loop_sends_the_waiting_result_after_it(tmp_path: Path) -> None:
    log = Log()
    log.user("Check it")
    log.answer([{"functionCall": {"id": "a", "name": "read_file", "args": {}}}], usage(9000, 5, 9005))
    log.result("a", "read_file", {"output": "long file"})
    history = [{"role": "user", "parts": [{"text": "summary"}]}]
    log.add("system", subtype="chat_compression", systemPayload={"info": {}, "compressedHistory": history})
    log.answer([{"text": "ok"}], usage(200, 1, 201))
    parsed, _ = parse(log.write(tmp_path))
    last = parsed.calls[1]
    sent = parsed.parts[last.prompt_start : last.prompt_end]
    assert [(p.kind, p.text) for p in sent] == [("summary", "summary"), ("tool_result", "long file")]


def test_the_conversation_follows_the_chain_to_the_last_record(tmp_path: Path) -> None:
    log = Log()
    first = log.user("Plan A")
    log.answer([{"text": "A."}], usage(100, 2, 102))
    log.user("Plan B (rewound)")
    log.answer([{"text": "B."}], usage(120, 2, 122))
    # A rewind re-roots the chain at the first answer: the second turn is on a dead branch.
    rewind = log.add("system", subtype="rewind", systemPayload={"truncatedCount": 2})
    log.lines[-1]["parentUuid"] = log.lines[1]["uuid"]
    log.user("Plan C")
    log.answer([{"text": "C."}], usage(110, 2, 112))
    side = log.add(
        "assistant",
        isSidechain=True,
        model="coder-model",
        message={"role": "model", "parts": [{"text": "sub"}]},
    )
    parsed, _ = parse(log.write(tmp_path))
    assert [p.text for p in parsed.parts] == ["Plan A", "A.", "Plan C", "C."]
    assert [c.ctx for c in parsed.calls] == [100, 110]
    assert parsed.session.meta is not None and parsed.session.meta["off_path_records"] == 3
    assert first and rewind and side


def test_session_fields(tmp_path: Path) -> None:
    log = Log()
    log.user("Reconcile the bank feed\nwith the ledger")
    log.answer([{"text": "ok"}], usage(100, 1, 101))
    log.add(
        "system", subtype="custom_title", systemPayload={"customTitle": "Bank feed", "titleSource": "auto"}
    )
    parsed, _ = parse(log.write(tmp_path))
    s = parsed.session
    assert (s.uid, s.native_id, s.tool, s.layout, s.project, s.title) == (
        f"qwen-code:{SID}",
        SID,
        "qwen-code",
        "qwen-code-jsonl",
        CWD,
        "Bank feed",
    )
    assert s.started_at is not None and s.ended_at is not None and s.started_at < s.ended_at
    log.lines.pop()
    parsed, _ = parse(log.write(tmp_path))
    assert parsed.session.title == "Reconcile the bank feed"


# -- sniffing ----------------------------------------------------------------------------------------


def test_sniffing_claims_qwen_logs_and_nothing_else(tmp_path: Path) -> None:
    log = Log()
    log.user("hi")
    path = log.write(tmp_path)
    head = path.read_bytes()[:HEAD_BYTES]
    assert IMPORTER.sniff_file(path, head)
    assert not CLAUDE.sniff_file(path, head)
    found = sniff_file(path)
    assert found is not None and found.name == "qwen-code"
    assert not IMPORTER.sniff_file(path.with_suffix(".json"), head)
    assert not IMPORTER.sniff_dir(tmp_path)
    claude = b'{"type":"user","sessionId":"s","uuid":"u","parentUuid":null,"message":{"role":"user","content":"hi"}}\n'
    assert not IMPORTER.sniff_file(tmp_path / "c.jsonl", claude)
    assert CLAUDE.sniff_file(tmp_path / "c.jsonl", claude)
    gemini = b'{"sessionId":"s","projectHash":"ab","startTime":"2026-01-01T00:00:00.000Z","kind":"main"}\n'
    assert not IMPORTER.sniff_file(tmp_path / "g.jsonl", gemini)
    for junk in (b"", b"not json\n", b"[1,2]\n", b'{"uuid":"u","sessionId":"s","type":"user"}\n'):
        assert not IMPORTER.sniff_file(tmp_path / "x.jsonl", junk)


def test_a_first_line_longer_than_the_head_is_judged_by_its_keys(tmp_path: Path) -> None:
    log = Log()
    log.user("x" * (HEAD_BYTES * 2))
    path = log.write(tmp_path)
    head = path.read_bytes()[:HEAD_BYTES]
    assert IMPORTER.sniff_file(path, head)
    assert not CLAUDE.sniff_file(path, head)
    system = Log()
    system.add("system", subtype="session_source", systemPayload={"sourceType": "y" * HEAD_BYTES * 2})
    path = system.write(tmp_path, "s.jsonl")
    assert IMPORTER.sniff_file(path, path.read_bytes()[:HEAD_BYTES])
    assert not CLAUDE.sniff_file(path, path.read_bytes()[:HEAD_BYTES])


# -- default paths -----------------------------------------------------------------------------------


def test_default_paths_follow_qwen_runtime_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("QWEN_RUNTIME_DIR", raising=False)
    assert IMPORTER.default_paths() == [tmp_path / "home" / ".qwen" / "projects"]
    monkeypatch.setenv("QWEN_RUNTIME_DIR", str(tmp_path / "rt"))
    assert IMPORTER.default_paths() == [tmp_path / "rt" / "projects"]
    monkeypatch.setenv("QWEN_RUNTIME_DIR", "~/runtime")
    assert runtime_dir() == tmp_path / "home" / "runtime"
    monkeypatch.setenv("QWEN_RUNTIME_DIR", "  ")
    assert runtime_dir() == tmp_path / "home" / ".qwen"
    assert get_importer("qwen-code") is IMPORTER


# -- bad input ---------------------------------------------------------------------------------------


def test_a_damaged_line_costs_only_itself(tmp_path: Path) -> None:
    log = Log()
    log.user("one")
    log.answer([{"text": "a"}], usage(100, 1, 101))
    log.user("two")
    log.answer([{"text": "b"}], usage(120, 1, 121))
    path = log.write(tmp_path)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2][:25] + "\n"  # the second prompt, torn
    lines.insert(1, "[1, 2]\n")
    path.write_text("".join(lines), encoding="utf-8")
    parsed, warnings = parse(path)
    assert [c.ctx for c in parsed.calls] == [100, 120]
    assert [p.text for p in parsed.parts] == ["one", "a", "b"]  # the torn prompt alone is lost
    assert [str(w) for w in warnings] == [
        f"this line is not a JSON object; left out, the rest of the session was imported ({path}:2)",
        f"this line is not valid JSON (unexpected end of data); left out, the rest of the session was imported ({path}:4)",
    ]


def test_an_unfinished_last_line_is_left_for_the_next_read(tmp_path: Path) -> None:
    log = Log()
    log.user("one")
    log.answer([{"text": "a"}], usage(100, 1, 101))
    path = log.write(tmp_path)
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"uuid":"00000000-0000-4000-8000-000000000003","parentUuid"')
    parsed, warnings = parse(path)
    assert len(parsed.calls) == 1
    assert [str(w) for w in warnings] == [
        f"the last line is unfinished (qwen-code may still be writing it); left out ({path}:3); "
        "ingest again once it is complete to add it"
    ]


def test_a_version_calib_does_not_know_is_one_input_error(tmp_path: Path) -> None:
    log = Log(version="1.0.0")
    log.user("one")
    path = log.write(tmp_path)
    with pytest.raises(InputError) as err:
        list(IMPORTER.parse(path))
    assert str(err.value) == (
        "written by Qwen Code 1.0.0, whose chat log format calib does not know (it reads 0.x) "
        f"({path}:1); update calib, or leave this file out (the other files were still imported)"
    )


def test_files_without_chat_records_are_input_errors(tmp_path: Path) -> None:
    empty = tmp_path / "e.jsonl"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(InputError) as err:
        list(IMPORTER.parse(empty))
    assert str(err.value) == f"empty file ({empty}); it holds no session; delete it or leave it out"
    junk = tmp_path / "j.jsonl"
    junk.write_text('{"a": 1}\nnot json\n', encoding="utf-8")
    with pytest.raises(InputError) as err:
        list(IMPORTER.parse(junk))
    assert str(err.value) == (
        f"not a Qwen Code chat log: no line is a chat record (uuid, sessionId, type) ({junk}:1); "
        "the file is truncated or damaged; restore it or leave it out (other files were still imported)"
    )


def test_parse_never_writes_its_source(tmp_path: Path) -> None:
    log = Log()
    log.user("one")
    log.answer([{"text": "a"}], usage(100, 1, 101))
    path = log.write(tmp_path)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    parse(path)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_token_sums_per_session_equal_ccusages(tmp_path: Path) -> None:
    """ccusage (`ccusage qwen`) reads the same chat logs: per session, its input is the sum of the
    prompt counts (cache included, calib's `ctx`), its cache reads and output are calib's. (Its
    `totalTokens` adds the cache reads to an input that already holds them, so it is not compared.)"""
    ccusage = find_ccusage()
    if ccusage is None:
        pytest.skip("ccusage not found: set $CALIB_CCUSAGE or put ccusage on PATH")
    home = tmp_path / "home"
    write_sample("qwen-code", home, sessions=6)
    db = tmp_path / "calib.duckdb"
    ingest_sessions([home], db=db)
    with Store(db, read_only=True) as store:
        ours = {
            native: (ctx, read, output)
            for native, ctx, read, output in store.con.execute(
                "SELECT s.native_id, sum(c.ctx), sum(c.cache_read), sum(c.output) FROM calls c "
                "JOIN sessions s USING (session_uid) GROUP BY ALL"
            ).fetchall()
        }
    run = subprocess.run(
        [ccusage, "qwen", "session", "--json", "--offline"],
        env={**os.environ, "HOME": str(home), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    theirs = {
        s["sessionId"]: (s["inputTokens"], s["cacheReadTokens"], s["outputTokens"])
        for s in json.loads(run.stdout)["sessions"]
    }
    assert len(theirs) == 6 and theirs == ours
