"""gemini-cli masked tool outputs read back from `tool-outputs/`: stored as pruned where the data says
when the placeholder took effect, left as recorded whenever the file cannot be trusted."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from calib.importers.gemini_cli import parse_session, read_increment
from calib.importers.gemini_cli.masking import MAX_OUTPUT_BYTES, output_file, pointer
from calib.ingest.pipeline import ingest
from calib.ingest.result import IngestResult
from calib.scoring.chain import feature_column, features
from calib.store.store import Store
from calib.synth import truth_document
from calib.synth.gemini_cli import MASKING_TRUTH, masked_sessions, write
from calib.synth.generate import LAYOUT_EVENTS, flatten

SID = "0b23371a-ce2e-4b1c-81a0-44af5d94d9ce"
OTHER_SID = "5e0c4f7d-1111-4222-8333-444455556666"
START = "2026-03-20T10:00:00.000Z"
SLUG = "my-repo"
# where the recording machine kept the project's temp dir (the files are looked up under the local one)
RECORDED = f"/home/someone/.gemini/tmp/{'ab' * 32}"
BIG = {"output": "".join(f"line {i}: some file content\n" for i in range(400))}


def _ts(second: int) -> str:
    return f"2026-03-20T10:{second // 60:02d}:{second % 60:02d}.000Z"


def _at(second: int) -> datetime:
    return datetime(2026, 3, 20, 10, second // 60, second % 60)


def _tokens(ctx: int, output: int = 40) -> dict[str, int]:
    return {"input": ctx, "output": output, "cached": 0, "thoughts": 0, "tool": 0, "total": ctx + output}


def _placeholder(name: str, sid: str = SID, where: str | None = None) -> str:
    path = where if where is not None else f"{RECORDED}/tool-outputs/session-{sid}/{name}"
    return (
        '<tool_output_masked>\n{\n  "output": "line 0: some file content\\n..."\n}\n\n'
        f"Output too large. Full output available at: {path}\n</tool_output_masked>"
    )


def _gemini(mid: str, second: int, ctx: int, calls: list[tuple[str, Any]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": mid,
        "timestamp": _ts(second),
        "type": "gemini",
        "content": "" if calls else "Done.",
        "thoughts": [],
        "tokens": _tokens(ctx),
        "model": "gemini-3-flash-preview",
    }
    if calls:
        message["toolCalls"] = [
            {
                "id": cid,
                "name": "read_file",
                "args": {"file_path": cid},
                "result": [{"functionResponse": {"id": cid, "name": "read_file", "response": response}}],
                "status": "success",
                "timestamp": _ts(second),
            }
            for cid, response in calls
        ]
    return message


def _messages(masked: dict[str, str], big: str = "c1") -> list[dict[str, Any]]:
    """One user turn and four calls: call 0 reads `big` (sent in full to call 1), call 1 reads a small
    file, masking before call 2 shrinks the prompt, call 3 ends. `masked` maps call ids to the text
    the record holds instead of their output."""

    def response(cid: str, output: dict[str, Any]) -> dict[str, Any]:
        return {"output": masked[cid]} if cid in masked else output

    return [
        {"id": "u1", "timestamp": _ts(1), "type": "user", "content": [{"text": "Read the files."}]},
        _gemini("g1", 10, 9000, [(big, response(big, BIG))]),
        _gemini("g2", 20, 13000, [("c2", response("c2", {"output": "tiny"}))]),
        _gemini("g3", 30, 9400, [("c3", response("c3", {"output": "tiny too"}))]),
        _gemini("g4", 40, 9500),
    ]


def _temp(root: Path) -> Path:
    return root / ".gemini" / "tmp" / SLUG


def _record(root: Path, messages: list[dict[str, Any]], sid: str = SID) -> Path:
    chats = _temp(root) / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    path = chats / f"session-2026-03-20T10-00-{sid[:8]}.json"
    record = {"sessionId": sid, "projectHash": "ab" * 32, "startTime": START, "lastUpdated": START}
    path.write_text(json.dumps({**record, "messages": messages}, indent=2), encoding="utf-8")
    return path


def _save(root: Path, name: str, response: dict[str, Any], written: datetime | None, sid: str = SID) -> Path:
    """The file gemini-cli wrote on masking: the response as `JSON.stringify(r, null, 2)`."""
    path = _temp(root) / "tool-outputs" / f"session-{sid}" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(response, indent=2), encoding="utf-8")
    if written is not None:
        stamp = (written - datetime(1970, 1, 1)).total_seconds()
        os.utime(path, (stamp, stamp))
    return path


MASKED_AT = _at(25)  # between call 1 (second 20) and call 2 (second 30)


def _masked_session(root: Path, written: datetime | None = MASKED_AT, sid: str = SID) -> Path:
    _save(root, "read_file_c1_k3x9q.txt", BIG, written, sid)
    return _record(root, _messages({"c1": _placeholder("read_file_c1_k3x9q.txt", sid)}), sid)


def _result_part(path: Path, call_id: str = "c1") -> Any:
    session = parse_session(path)
    calls = [p for p in session.parts if p.kind == "tool_call" and call_id in p.text]
    return session, session.parts[calls[0].seq + 1]


# -- the placeholder and the path --------------------------------------------------------------------


def test_pointer_reads_the_path_of_the_service_placeholder_only() -> None:
    assert pointer(_placeholder("x.txt")) == f"{RECORDED}/tool-outputs/session-{SID}/x.txt"
    windows = _placeholder("", where="C:\\Users\\me\\.gemini\\tmp\\p\\tool-outputs\\session-1\\a.txt")
    assert pointer(windows) == "C:\\Users\\me\\.gemini\\tmp\\p\\tool-outputs\\session-1\\a.txt"
    processor = (
        "<tool_output_masked>\n[Tool observation string (0.10MB, 9 lines) masked to preserve context window. "
        "Full string saved to: /h/.gemini/tmp/p/tool-outputs/session-1/a.txt]\n</tool_output_masked>"
    )
    assert pointer(processor) is None  # masked before any call saw it: nothing to read back
    assert pointer("plain output that mentions <tool_output_masked>") is None


def test_output_file_stays_inside_the_temp_dir(tmp_path: Path) -> None:
    temp = tmp_path / "tmp" / "proj"
    inside = temp / "tool-outputs" / "session-1" / "a.txt"
    inside.parent.mkdir(parents=True)
    inside.write_text("{}", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("{}", encoding="utf-8")
    (temp / "tool-outputs" / "session-1" / "link.txt").symlink_to(tmp_path / "secret.txt")
    assert (
        output_file("/elsewhere/.gemini/tmp/old-hash/tool-outputs/session-1/a.txt", temp) == inside.resolve()
    )
    assert output_file("tool-outputs\\session-1\\a.txt", temp) == inside.resolve()
    for bad in (
        "../../etc/passwd",
        "/etc/passwd",
        "/x/tool-outputs/../../secret.txt",
        "/x/tool-outputs/session-1/../../../secret.txt",
        "/x/tool-outputs/session-1/link.txt",  # a symlink out of the temp dir
        "/x/tool-outputs/session-1/missing.txt",
        "/x/tool-outputs/",
    ):
        assert output_file(bad, temp) is None, bad


# -- read back and placed ----------------------------------------------------------------------------


def test_recovered_output_is_full_before_the_masking_call_and_the_placeholder_after(tmp_path: Path) -> None:
    path = _masked_session(tmp_path)
    session, part = _result_part(path)
    assert part.text == BIG["output"]  # what call 1, the first sent it, was sent
    assert part.pruned_text == _placeholder("read_file_c1_k3x9q.txt")
    assert part.pruned_at == _at(30)  # call 2 (g3) is the first recorded after the file was written
    assert session.session.meta == {
        "project_hash": "ab" * 32,
        "masked_tool_outputs": 1,
        "recovered_tool_outputs": 1,
    }
    # every other part has no pruning
    assert [p.seq for p in session.parts if p.pruned_at is not None] == [part.seq]


def test_without_a_usable_file_time_the_prompt_drop_places_it(tmp_path: Path) -> None:
    # copied files carry the copy's time, after every call: the usage tells the call instead
    path = _masked_session(tmp_path, written=_at(3000))
    _, part = _result_part(path)
    assert (part.text, part.pruned_at) == (BIG["output"], _at(30))


def test_a_time_before_the_output_was_sent_is_not_trusted(tmp_path: Path) -> None:
    path = _masked_session(tmp_path, written=_at(5))  # before call 0: impossible, so the drop decides
    _, part = _result_part(path)
    assert part.pruned_at == _at(30)


def test_no_time_and_no_drop_leaves_it_as_recorded(tmp_path: Path) -> None:
    messages = _messages({"c1": _placeholder("read_file_c1_k3x9q.txt")})
    # no drop at calls 2 and 3: the usage does not tell when
    messages[3]["tokens"], messages[4]["tokens"] = _tokens(13300), _tokens(13400)
    _save(tmp_path, "read_file_c1_k3x9q.txt", BIG, _at(3000))
    _, part = _result_part(_record(tmp_path, messages))
    assert (part.text, part.pruned_at, part.pruned_text) == (
        _placeholder("read_file_c1_k3x9q.txt"),
        None,
        None,
    )


def _two_batches(root: Path, first: datetime, second: datetime) -> Path:
    """c1 sent to call 1 and masked before call 2; c3 sent to call 3 and masked before call 4."""
    _save(root, "a.txt", BIG, first)
    _save(root, "b.txt", BIG, second)
    messages = [
        {"id": "u1", "timestamp": _ts(1), "type": "user", "content": [{"text": "Read."}]},
        _gemini("g1", 10, 9000, [("c1", {"output": _placeholder("a.txt")})]),
        _gemini("g2", 20, 13000, [("c2", {"output": "tiny"})]),
        _gemini("g3", 30, 9400, [("c3", {"output": _placeholder("b.txt")})]),
        _gemini("g4", 40, 13500, [("c4", {"output": "tiny"})]),
        _gemini("g5", 50, 9700),
    ]
    return _record(root, messages)


def test_each_batch_takes_its_own_call(tmp_path: Path) -> None:
    session = parse_session(_two_batches(tmp_path, _at(25), _at(45)))
    pruned = [(p.text == BIG["output"], p.pruned_at) for p in session.parts if p.pruned_at is not None]
    assert pruned == [(True, _at(30)), (True, _at(50))]


def test_two_drops_and_no_file_times_place_only_what_is_certain(tmp_path: Path) -> None:
    session = parse_session(_two_batches(tmp_path, _at(3000), _at(3000)))
    results = [p for p in session.parts if p.kind == "tool_result" and "tiny" not in p.text]
    # c1 could have been masked before call 2 or call 4; c3 was sent after the first drop: call 4
    assert (results[0].pruned_at, results[0].text) == (None, _placeholder("a.txt"))
    assert (results[1].pruned_at, results[1].text) == (_at(50), BIG["output"])
    assert session.session.meta is not None and session.session.meta["recovered_tool_outputs"] == 1


def test_a_later_output_placed_by_its_file_time_bounds_an_earlier_one(tmp_path: Path) -> None:
    # c3's time puts it at call 4, so c1 (masked no later) lies in [call 2, call 4]: still two drops
    session = parse_session(_two_batches(tmp_path, _at(3000), _at(45)))
    assert [p.pruned_at for p in session.parts if p.pruned_at is not None] == [_at(50)]
    # c1's time puts it at call 2; c3 (masked no earlier, first sent to call 3) has one drop left
    session = parse_session(_two_batches(tmp_path, _at(25), _at(3000)))
    assert [p.pruned_at for p in session.parts if p.pruned_at is not None] == [_at(30), _at(50)]


def test_error_responses_read_back_as_the_text_of_the_whole_response(tmp_path: Path) -> None:
    error = {"error": "Permission denied: " + "x" * 3000}
    _save(tmp_path, "e.txt", error, _at(25))
    path = _record(tmp_path, _messages({"c1": _placeholder("e.txt")}))
    _, part = _result_part(path)
    assert part.text == json.dumps(error, separators=(",", ":"))


# -- files that cannot be trusted -----------------------------------------------------------------


def _fifo(path: Path) -> None:
    os.mkfifo(path)


BAD_FILES = {
    "missing": lambda path: path.unlink(),
    "a folder": lambda path: (path.unlink(), path.mkdir()),
    "a FIFO": lambda path: (path.unlink(), _fifo(path)),
    "not JSON": lambda path: path.write_text("line 0: some file content", encoding="utf-8"),
    "not an object": lambda path: path.write_text('"just a string"', encoding="utf-8"),
    "not UTF-8": lambda path: path.write_bytes(b'{"output": "\xff\xfe"}'),
    # sparse: larger than the limit without taking the room
    "huge": lambda path: os.truncate(path, MAX_OUTPUT_BYTES + 1),
}


@pytest.mark.parametrize("damage", sorted(BAD_FILES))
def test_a_file_that_cannot_be_read_back_leaves_the_part_masked(tmp_path: Path, damage: str) -> None:
    path = _masked_session(tmp_path)
    BAD_FILES[damage](_temp(tmp_path) / "tool-outputs" / f"session-{SID}" / "read_file_c1_k3x9q.txt")
    session, part = _result_part(path)
    assert (part.text, part.pruned_at, part.pruned_text) == (
        _placeholder("read_file_c1_k3x9q.txt"),
        None,
        None,
    )
    assert session.session.meta is not None
    assert session.session.meta["masked_tool_outputs"] == 1
    assert "recovered_tool_outputs" not in session.session.meta


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_leaves_the_part_masked(tmp_path: Path) -> None:
    path = _masked_session(tmp_path)
    saved = _temp(tmp_path) / "tool-outputs" / f"session-{SID}" / "read_file_c1_k3x9q.txt"
    saved.chmod(0)
    try:
        _, part = _result_part(path)
    finally:
        saved.chmod(0o644)
    assert (part.text, part.pruned_at) == (_placeholder("read_file_c1_k3x9q.txt"), None)


def test_a_file_the_os_refuses_leaves_the_part_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # what an unreadable file does when the tests run as root, who reads any file
    from calib.importers.gemini_cli import masking

    def refuse(path: Any) -> Any:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(masking, "open_regular", refuse)
    _, part = _result_part(_masked_session(tmp_path))
    assert (part.text, part.pruned_at) == (_placeholder("read_file_c1_k3x9q.txt"), None)


@pytest.mark.parametrize(
    "where",
    [
        "../../etc/passwd",
        "/etc/passwd",
        f"{RECORDED}/tool-outputs/session-{SID}/../../chats/secret.txt",
        "tool-outputs/../../../outside.txt",
    ],
)
def test_a_path_out_of_the_temp_dir_is_never_read(tmp_path: Path, where: str) -> None:
    (_temp(tmp_path) / "chats").mkdir(parents=True)
    for decoy in (tmp_path / ".gemini" / "outside.txt", _temp(tmp_path) / "chats" / "secret.txt"):
        decoy.write_text(json.dumps(BIG), encoding="utf-8")
        os.utime(decoy, (0, 0))
    path = _record(tmp_path, _messages({"c1": _placeholder("", where=where)}))
    _, part = _result_part(path)
    assert (part.pruned_at, part.text) == (None, _placeholder("", where=where))


def test_a_recording_outside_a_chats_folder_reads_nothing_back(tmp_path: Path) -> None:
    path = _masked_session(tmp_path)
    loose = tmp_path / "loose.json"
    loose.write_bytes(path.read_bytes())
    _, part = _result_part(loose)
    assert part.pruned_at is None and part.text == _placeholder("read_file_c1_k3x9q.txt")


# -- ingest ------------------------------------------------------------------------------------------


def test_ingest_stores_it_and_a_bad_file_costs_only_its_part(tmp_path: Path) -> None:
    _masked_session(tmp_path)
    _masked_session(tmp_path, sid=OTHER_SID)
    (_temp(tmp_path) / "tool-outputs" / f"session-{OTHER_SID}" / "read_file_c1_k3x9q.txt").write_text(
        "garbage", encoding="utf-8"
    )
    with Store(tmp_path / "calib.duckdb") as store:
        result = ingest([tmp_path / ".gemini"], store=store)
        assert result.ok and result.sessions == 2, [str(e) for e in result.errors]
        # the summary counts both masked outputs, and the one read back
        assert (result.masked, result.recovered) == (2, 1)
        assert "2 masked tool outputs, 1 read back" in result.summary()
        parts = store.parts().filter(pl.col("kind") == "tool_result").sort("session_uid", "seq")
        meta = dict(store.con.execute("SELECT native_id, meta FROM sessions").fetchall())
    pruned = parts.filter(pl.col("pruned_at").is_not_null())
    assert pruned.height == 1 and pruned["text"][0] == BIG["output"]
    assert pruned["pruned_text"][0] == _placeholder("read_file_c1_k3x9q.txt")
    assert json.loads(meta[SID])["recovered_tool_outputs"] == 1
    assert "recovered_tool_outputs" not in json.loads(meta[OTHER_SID])
    assert parts.filter(pl.col("text") == _placeholder("read_file_c1_k3x9q.txt", OTHER_SID)).height == 1


def test_scoring_sees_the_full_output_before_and_a_removal_at_the_masking_call(tmp_path: Path) -> None:
    _masked_session(tmp_path)
    with Store(tmp_path / "calib.duckdb") as store:
        assert ingest([tmp_path / ".gemini"], store=store).ok
        frame = features(store, ["chars4"]).sort("seq")
    rows = frame.to_dicts()
    assert [r["status"] for r in rows] == ["baseline", "ok", "ok", "ok"]
    assert [r["removal"] for r in rows] == [None, None, "pruned", None]
    # call 1 was appended the full output; at call 2 the full text left and its placeholder stayed
    full, placeholder = len(BIG["output"]) / 4, len(_placeholder("read_file_c1_k3x9q.txt")) / 4
    assert rows[1][feature_column("a", "chars4", "tool")] == pytest.approx(full, abs=1)
    assert rows[2][feature_column("r", "chars4", "tool")] == pytest.approx(full - placeholder, abs=2)


def test_ingesting_again_adds_nothing(tmp_path: Path) -> None:
    _masked_session(tmp_path)
    with Store(tmp_path / "calib.duckdb") as store:
        first = ingest([tmp_path / ".gemini"], store=store)
        rows = store.parts().sort("seq")
        again = ingest([tmp_path / ".gemini"], store=store, full=True)
        assert (again.sessions, again.calls, again.parts) == (0, 0, 0)
        assert first.parts == rows.height
        assert store.parts().sort("seq").equals(rows)
        assert store.con.execute("SELECT count(DISTINCT part_uid) = count(*) FROM parts").fetchone() == (
            True,
        )


def test_the_ingest_summary_counts_masked_and_recovered_outputs() -> None:
    result = IngestResult(files=1, sessions=1, calls=4, parts=9)
    result.add(IngestResult(masked=3, recovered=2))
    other = IngestResult(masked=1)
    result.merge(other)
    assert (result.masked, result.recovered) == (4, 2)
    assert "; 4 masked tool outputs, 2 read back" in result.summary()
    document = result.to_dict()
    assert (document["masked"], document["recovered"]) == (4, 2)
    assert "masked" not in IngestResult(files=1).summary()


# -- a JSONL log (v0.39-v0.43: masking re-appends the calling message) -------------------------------


def _jsonl(root: Path, lines: list[dict[str, Any]]) -> Path:
    chats = _temp(root) / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    path = chats / f"session-2026-03-20T10-00-{SID[:8]}.jsonl"
    meta = {"sessionId": SID, "projectHash": "ab" * 32, "startTime": START, "lastUpdated": START}
    path.write_text("".join(json.dumps(x) + "\n" for x in [meta, *lines]), encoding="utf-8")
    return path


def test_jsonl_reads_whole_while_a_masked_output_is_stored(tmp_path: Path) -> None:
    _save(tmp_path, "read_file_c1_k3x9q.txt", BIG, _at(25))
    messages = _messages({})
    masked = _messages({"c1": _placeholder("read_file_c1_k3x9q.txt")})
    # the full g1, then masking re-appends it before call 2 (g3)
    path = _jsonl(tmp_path, [*messages[:3], masked[1], messages[3]])
    first = read_increment(path)
    assert first.state["masked"] == 1
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(messages[4]) + "\n")
    second = read_increment(path, first.offset, first.state)
    assert not second.appended  # a whole read: the stored rows may change with the new call
    whole = parse_session(path)
    assert second.records[0] == whole
    part = next(p for p in whole.parts if p.pruned_at is not None)
    assert (part.text, part.pruned_at) == (BIG["output"], _at(30))


def test_a_checkpoint_copy_is_never_read_back(tmp_path: Path) -> None:
    # v0.44+ rewrites the history with `$set.messages`: only calls after it saw the copy (a placeholder)
    _save(tmp_path, "read_file_c1_k3x9q.txt", BIG, MASKED_AT)
    full = _messages({})
    masked = _messages({"c1": _placeholder("read_file_c1_k3x9q.txt")})
    path = _jsonl(tmp_path, [*full[:3], {"$set": {"messages": masked[:3]}}, full[3]])
    session = parse_session(path)
    assert all(p.pruned_at is None for p in session.parts)
    texts = [p.text for p in session.parts if p.kind == "tool_result"]
    assert texts.count(BIG["output"]) == 1 and texts.count(_placeholder("read_file_c1_k3x9q.txt")) == 1
    assert session.session.meta is not None and "recovered_tool_outputs" not in session.session.meta


# -- a synthetic session with a known truth ----------------------------------------------------------

SEED = 33
SESSIONS = 6


def _naive(ts: datetime | None) -> datetime | None:
    return ts.replace(tzinfo=None) if ts is not None and ts.tzinfo is not None else ts


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Any], pl.DataFrame, Store]:
    root = tmp_path_factory.mktemp("masked")
    sessions = masked_sessions(SESSIONS, SEED)
    assert sum(len(s.truth.get(MASKING_TRUTH) or ()) for s in sessions) >= 6
    write(sessions, root / "data", "gemini-json-parts")
    doc = truth_document(sessions, tool="gemini-cli", layout="gemini-json-parts", seed=SEED)
    store = Store(root / "calib.duckdb")
    outcome = ingest([root / "data"], store=store)
    assert outcome.ok, [str(e) for e in outcome.errors]
    frame = features(store, sorted({s["base"] for s in doc["session_truth"]}))
    return sessions, frame, store


def test_synthetic_masked_sessions_store_what_each_call_was_sent(synthetic: Any) -> None:
    sessions, _, store = synthetic
    events = LAYOUT_EVENTS["gemini-cli"]["gemini-json-parts"]
    stored = store.sessions()
    calls = store.calls()
    parts = store.parts()
    for session in sessions:
        uid = stored.filter(pl.col("native_id") == session.id)["session_uid"][0]
        meta = json.loads(stored.filter(pl.col("session_uid") == uid)["meta"][0])
        masked = session.truth.get(MASKING_TRUTH) or []
        assert meta.get("recovered_tool_outputs", 0) == meta.get("masked_tool_outputs", 0) == len(masked)
        rows = calls.filter(pl.col("session_uid") == uid).sort("seq").to_dicts()
        prows = parts.filter(pl.col("session_uid") == uid).sort("seq").to_dicts()
        flat, flat_calls = flatten(session, events, session.truth["reasoning"])
        for row, fc in zip(rows, flat_calls, strict=True):
            at = fc.step.ts
            got = [
                (
                    p["kind"],
                    p["pruned_text"]
                    if _naive(p["pruned_at"]) and _naive(p["pruned_at"]) <= at
                    else p["text"],
                )
                for p in prows[row["prompt_start"] : row["prompt_end"]]
                if p["resent"]
            ]
            want = [(p.kind, p.sent(at)) for p in flat[fc.prompt_start : fc.prompt_end] if p.resent]
            assert got == want, (session.id, row["seq"])
        for entry in masked:
            hit = [p for p in prows if p["pruned_text"] == entry["placeholder"]]
            assert len(hit) == 1
            k = entry["masked_before_call"]
            assert _naive(hit[0]["pruned_at"]) == _naive(rows[k]["ts"])


def test_scoring_a_synthetic_masked_session_follows_the_truth(synthetic: Any) -> None:
    sessions, frame, store = synthetic
    native = dict(store.con.execute("SELECT session_uid, native_id FROM sessions").fetchall())
    truth = {s.id: s for s in sessions}
    assert "masked" not in set(frame["reason"].drop_nulls())
    scored = 0
    for row in frame.iter_rows(named=True):
        session = truth[native[row["session_uid"]]]
        record = session.truth["calls"][row["seq"]]
        if record["break"] == "prune" and record["delta"] is not None:
            # the masking call: a removal estimated between two calls, never a break
            assert (row["status"], row["reason"], row["removal"]) == ("ok", None, "pruned")
            base, ratio = session.truth["base"], session.truth["ratio"]
            appended = sum(row[feature_column("a", base, g)] for g in ("model", "tool", "user"))
            left = sum(row[feature_column("r", base, g)] for g in ("model", "tool", "user"))
            estimate = ratio * (appended - left) + session.truth["per_message_overhead"] * row["messages"]
            assert abs(estimate - row["delta"]) <= 0.5 * (row["parts"] + 2) + 1
            scored += 1
        elif record["break"] is None and record["delta"] is not None:
            assert row["status"] == "ok" and row["removal"] is None
    assert scored >= 3
