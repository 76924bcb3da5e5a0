"""The Codex importer on the real rollouts in ../shared/fixtures/codex, on calib.synth's, and against ccusage."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from helpers import shared_fixture

from calib.core.records import ParsedSession
from calib.importers.codex import IMPORTER, read_increment
from calib.synth import generate
from calib.synth.agents import LAYOUT_EVENTS
from calib.synth.codex import write
from calib.synth.history import flatten

pytestmark = pytest.mark.realdata


def _homes() -> list[Path]:
    root = shared_fixture("codex")
    return sorted(p for p in root.iterdir() if p.is_dir())


def _rollouts(home: Path) -> list[Path]:
    return sorted(home.rglob("rollout-*.jsonl"))


def _all() -> list[Path]:
    return [p for home in _homes() for p in _rollouts(home)]


def _parse(path: Path) -> ParsedSession:
    (parsed,) = IMPORTER.parse(path)
    assert isinstance(parsed, ParsedSession)
    return parsed


def test_every_fixture_rollout_is_claimed_and_parsed() -> None:
    files = _all()
    assert len(files) == 10
    calls = 0
    for path in files:
        with path.open("rb") as fh:
            assert IMPORTER.sniff_file(path, fh.read(4096))
        parsed = _parse(path)
        s = parsed.session
        assert path.name.endswith(f"{s.native_id}.jsonl") and s.project and s.title
        assert parsed.parts[0].kind == "system" and parsed.parts[0].text.startswith("You are Codex")
        assert all(c.usage_status == "ok" and c.model for c in parsed.calls)
        # Every output part belongs to a call, except output of turns that ended without usage and
        # output at the end of the file still waiting for its token_count.
        last_owned = max(p.seq for p in parsed.parts if p.call_uid is not None)
        orphans = [p.seq for p in parsed.parts if p.role == "assistant" and p.call_uid is None]
        waiting = sum(1 for seq in orphans if seq > last_owned)
        assert len(orphans) - waiting == (s.meta or {}).get("output_items_without_usage", 0)
        calls += len(parsed.calls)
    assert calls == 777


def test_fixture_figures() -> None:
    counts: Counter[str] = Counter()
    for path in _all():
        meta = _parse(path).session.meta or {}
        counts["reemitted"] += meta.get("reemitted_token_counts", 0)
        counts["compactions"] += len(meta.get("compactions", []))
        counts["skipped_lines"] += meta.get("skipped_lines", 0)
    assert counts == Counter({"reemitted": 9, "compactions": 3})


def test_pairs_within_a_turn_grow_by_what_was_appended() -> None:
    # Within a turn, delta = ctx[k] - ctx[k-1] - carry[k-1] is rarely below zero: attribution keeps each
    # call's own output (reasoning included: Codex passes it back within the turn) out of what was
    # appended and the tool results in it (7 of 720 pairs fall more than 100 tokens below zero in the
    # fixtures: context Codex dropped mid-turn).
    pairs = negative = 0
    for path in _all():
        calls = _parse(path).calls
        for prev, call in itertools.pairwise(calls):
            if call.message_id != prev.message_id or call.prompt_start != prev.prompt_start:
                continue
            assert prev.ctx is not None and prev.carry is not None and call.ctx is not None
            pairs += 1
            negative += call.ctx - prev.ctx - prev.carry < -100
    assert (pairs, negative) == (720, 7)


def test_fixture_read_in_pieces_equals_one_whole_read(tmp_path: Path) -> None:
    source = min(_all(), key=lambda p: p.stat().st_size)
    data = source.read_bytes()
    whole = _parse(source)
    copy = tmp_path / "sessions" / source.name
    copy.parent.mkdir()
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    cuts = [*ends[:: max(1, len(ends) // 25)], len(data)]
    parts, calls = [], []
    offset, state = 0, None
    for cut in cuts:
        copy.write_bytes(data[:cut])
        inc = read_increment(copy, offset, state)
        (got,) = inc.records
        assert isinstance(got, ParsedSession)
        if inc.appended:
            parts += got.parts
            calls += got.calls
        else:
            parts, calls = list(got.parts), list(got.calls)
        offset, state = inc.offset, inc.state
    assert parts == whole.parts and calls == whole.calls


def _ccusage() -> str:
    try:
        from benchmarks.bench_ingest import find_ccusage
    except ImportError:
        found = os.environ.get("CALIB_CCUSAGE")
    else:
        found = find_ccusage()
    if not found:
        pytest.skip("ccusage not found (set CALIB_CCUSAGE or put ccusage on PATH)")
    return found


@pytest.mark.slow
def test_usage_sums_equal_ccusage() -> None:
    """Per session, ccusage's sums equal calib's.

    ccusage reports `inputTokens` without the cached part (calib's `input` includes it, as Codex
    records it) and `outputTokens` with reasoning included (as calib's `output`). It counts a call
    per token_count whose total changed, as calib does; it gives no call count.
    """
    exe = _ccusage()
    for home in _homes():
        env = {**os.environ, "CODEX_HOME": str(home)}
        run = subprocess.run(
            [exe, "codex", "session", "--json", "--offline"],
            env=env,
            capture_output=True,
            timeout=300,
            check=True,
        )
        theirs = {s["sessionFile"]: s for s in json.loads(run.stdout)["sessions"]}
        files = _rollouts(home)
        assert sorted(theirs) == sorted(p.stem for p in files)
        for path in files:
            calls = _parse(path).calls
            t = theirs[path.stem]
            ours = {
                "input": sum(c.input or 0 for c in calls),
                "cache_read": sum(c.cache_read or 0 for c in calls),
                "output": sum(c.output or 0 for c in calls),
                "reasoning": sum(c.reasoning or 0 for c in calls),
            }
            assert ours == {
                "input": t["inputTokens"] + t["cacheReadTokens"],
                "cache_read": t["cacheReadTokens"],
                "output": t["outputTokens"],
                "reasoning": t["reasoningOutputTokens"],
            }, path.name


@pytest.mark.parametrize("seed", [3, 17])
def test_synthetic_rollouts_read_back_as_flatten(tmp_path: Path, seed: int) -> None:
    """Writer and importer agree exactly, without the ingest pipeline in between."""
    sessions = generate("codex", sessions=6, seed=seed)
    files = write(sessions, tmp_path, "codex-jsonl")
    events = LAYOUT_EVENTS["codex"]["codex-jsonl"]
    for session, path in zip(sessions, files, strict=True):
        parsed = _parse(path)
        flat_parts, flat_calls = flatten(session, events, session.truth["reasoning"])
        uids = [c.uid for c in parsed.calls]
        got = [
            (
                p.kind,
                p.text,
                None if p.call_uid is None else uids.index(p.call_uid),
                p.resent,
                p.pruned_at,
                p.pruned_text,
            )
            for p in parsed.parts
        ]
        # Reasoning included: re-sent, and pruned to nothing when the next turn starts.
        assert got == [(p.kind, p.text, p.call, p.resent, p.pruned_at, p.pruned_text) for p in flat_parts]
        assert [(c.prompt_start, c.prompt_end) for c in parsed.calls] == [
            (c.prompt_start, c.prompt_end) for c in flat_calls
        ]
        for call, rec, fc in zip(parsed.calls, session.truth["calls"], flat_calls, strict=True):
            assert call.ts == fc.step.ts
            if rec["reported"]:
                assert (call.usage_status, call.ctx, call.carry, call.cache_read) == (
                    "ok",
                    rec["ctx"],
                    rec["carry"],
                    rec["cache_read"],
                )
                assert (call.output, call.reasoning) == (rec["output"] + rec["reasoning"], rec["reasoning"])
            else:
                assert call.usage_status == "missing" and call.ctx is None


def test_fixture_chain_figures_do_not_regress(tmp_path: Path) -> None:
    """With carry = the whole output and reasoning dropped at each new turn, unbroken same-turn pairs grow
    by about the o200k count of what was appended, and a new turn's first call is scored with the
    reasoning that left (the counts its calls reported) taken out.

    Measured when the rule was set: 714 unbroken same-turn pairs, median |delta - estimate| 12 tokens
    (90th percentile 29); carry = output - reasoning gave a median residual of 52 and 19
    `negative_delta` breaks on new turns.
    """
    import polars as pl

    from calib.ingest.pipeline import ingest
    from calib.scoring.chain import features
    from calib.store.store import Store

    source = "tiktoken:o200k_base"
    root = shared_fixture("codex")
    with Store(tmp_path / "calib.duckdb") as store:
        outcome = ingest([root], store=store)
        assert outcome.ok, [str(e) for e in outcome.errors]
        rows = features(store, [source])
        turns = store.calls().select("call_uid", pl.col("message_id").alias("turn"))
    appended = [c for c in rows.columns if c.startswith(f"a|{source}|")]
    rows = (
        rows.join(turns, on="call_uid")
        .sort("session_uid", "seq")
        .with_columns(
            same_turn=pl.col("turn") == pl.col("turn").shift(1).over("session_uid"),
            residual=(pl.col("delta") - pl.sum_horizontal(appended)).abs(),
        )
    )
    same = rows.filter(pl.col("same_turn") & (pl.col("status") == "ok"))
    assert same.height >= 700
    assert same["residual"].median() < 20
    assert same["residual"].quantile(0.9) < 60
    new_turns = rows.filter(~pl.col("same_turn") & pl.col("same_turn").is_not_null())
    breaks = new_turns.filter(pl.col("status") == "break")
    assert set(breaks["reason"]) <= {"model_change", "compaction", "negative_delta"}
    # Measured when removals were added: 35 new-turn calls scored with their reasoning taken out,
    # median |residual| 4 tokens (p90 94), where leaving the reasoning in would miss by its count (median 1,024)
    scored = new_turns.filter((pl.col("status") == "ok") & (pl.col("removal") == "reasoning")).with_columns(
        residual=(pl.col("delta") + pl.col("removed_known") - pl.sum_horizontal(appended)).abs()
    )
    assert scored.height >= 30
    assert scored["residual"].median() < 20
    assert scored["removed_known"].median() > 500
