"""The Claude Code importer on the shared real transcripts, and against ccusage's per-session sums."""

from __future__ import annotations

import json
import os
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from benchmarks.bench_ingest import find_ccusage
from helpers import shared_fixture

from calib.analysis.rules import claude_code_rule
from calib.analysis.windows import load_windows
from calib.core.records import ParsedSession
from calib.importers.claude_code import IMPORTER

pytestmark = pytest.mark.realdata


def _parsed() -> list[ParsedSession]:
    root = shared_fixture("claude-code")
    out = []
    for path in sorted(root.glob("*/projects/*/*.jsonl")):
        for record in IMPORTER.parse(path):
            assert isinstance(record, ParsedSession)
            out.append(record)
    return out


def test_real_transcripts_give_the_known_sessions_calls_and_placeholders() -> None:
    parsed = _parsed()
    calls = [c for p in parsed for c in p.calls]
    assert len(parsed) == 36  # one per file: the two resumed /exit forks hold no call of their own
    assert not [p for p in parsed if ":branch-" in p.session.uid]
    # 1171 (message.id, requestId) groups, of which 3 are `<synthetic>` "No response requested." lines.
    assert len(calls) == 1168
    # 921 calls record fewer than 32 output tokens; all but 2 short text answers are placeholders.
    assert sum(c.output < 32 for c in calls if c.output is not None) == 921
    assert sum(c.output_placeholder for c in calls) == 919
    assert all(c.carry is None for c in calls if c.output_placeholder)
    assert all(p.session.project and not p.session.project.startswith("-") for p in parsed)


def test_real_compactions_follow_the_last_call_before_them() -> None:
    seen = 0
    for p in _parsed():
        for event in (p.session.meta or {}).get("compactions", []):
            seen += 1
            before, after = p.calls[event["at_call"] - 1], p.calls[event["at_call"]]
            assert before.ctx is not None and before.output is not None
            # preTokens = the last call's ctx + output, plus tool results added after it (auto).
            assert 0 <= event["preTokens"] - (before.ctx + before.output) < 7500
            assert p.parts[after.prompt_start].kind == "summary"
            assert after.prompt_start > before.prompt_start
    assert seen == 4


def _ccusage() -> str:
    found = find_ccusage()
    if found is None:
        pytest.skip("ccusage not found: set $CALIB_CCUSAGE or put ccusage on PATH")
    return found


def test_token_sums_per_session_equal_ccusage() -> None:
    """ccusage dedupes by (message.id, requestId) and keeps the largest entry, as calib does; its session
    report has no call counts, so the four token sums are compared. There is no difference on these
    transcripts: `<synthetic>` lines have zero usage, and the placeholder calls are summed as recorded
    by both (calib keeps `output` as recorded and only drops its carry)."""
    ccusage = _ccusage()
    root = shared_fixture("claude-code")
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        env = {**os.environ, "CLAUDE_CONFIG_DIR": str(folder), "NO_COLOR": "1"}
        run = subprocess.run(
            [ccusage, "claude", "session", "--json", "--offline"],
            env=env,
            capture_output=True,
            timeout=300,
            check=True,
        )
        theirs = {
            s["sessionId"]: (
                s["inputTokens"],
                s["outputTokens"],
                s["cacheReadTokens"],
                s["cacheCreationTokens"],
            )
            for s in json.loads(run.stdout)["sessions"]
        }
        ours: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        for path in folder.glob("projects/*/*.jsonl"):
            for record in IMPORTER.parse(path):
                assert isinstance(record, ParsedSession)
                sums = ours[record.session.native_id]
                for call in record.calls:
                    sums[0] += call.input or 0
                    sums[1] += call.output or 0
                    sums[2] += call.cache_read or 0
                    sums[3] += call.cache_write or 0
        assert {k: tuple(v) for k, v in ours.items()} == theirs, folder.name


def test_sources_found_under_a_config_dir_are_every_transcript(tmp_path: Path) -> None:
    from calib.ingest.sources import find_sources

    root = shared_fixture("claude-code")
    sources, _skipped, errors = find_sources([root])
    assert not errors
    assert len(sources) == 36 and {s.importer.name for s in sources} == {"claude-code"}


def test_the_auto_compact_rule_of_each_version_fires_where_the_real_sessions_compacted() -> None:
    # formats.md 8.5: Claude Code compacts when the last call's input + cache + output reaches
    # window - min(max output, 20k) - 13k (167k on 200k models; 155k up to 2.1.20). Each real automatic
    # compaction recorded its count (preTokens): it must lie at or just above its version's limit.
    windows = load_windows()
    seen = []
    for parsed in _parsed():
        meta = parsed.session.meta or {}
        for compaction in meta.get("compactions", []):
            if compaction["trigger"] != "auto":
                continue
            call = parsed.calls[compaction["at_call"] - 1]  # the last call before the boundary
            window = windows.lookup(call.model)
            assert window is not None
            limit = claude_code_rule(meta["versions"][-1]).limit(window)
            seen.append((meta["versions"][-1], compaction["preTokens"], limit))
            assert limit <= compaction["preTokens"] <= limit * 1.01, seen[-1]
    # 2.1.1 twice (155,301 and 155,539 over 155,000), 2.1.33 (168,483) and 2.1.45 (167,081) over 167,000
    assert sorted(seen) == [
        ("2.1.1", 155_301, 155_000.0),
        ("2.1.1", 155_539, 155_000.0),
        ("2.1.33", 168_483, 167_000.0),
        ("2.1.45", 167_081, 167_000.0),
    ]
