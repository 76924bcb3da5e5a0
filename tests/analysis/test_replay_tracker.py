"""Offline equals runtime: what `calib replay` shows for a calibrated estimator is what the runtime's
tracker shows when an agent feeds it the texts of its session and the usage of each call.

The replay drives the tracker with the counts the scoring made (`calib.analysis.accountant`); here a
tracker is fed as an agent feeds it, through its public methods only, with the texts read from the
store: the parts appended before each call (`append`, with the messages they frame), the text pruned
since the last report (`remove`, with its placeholder, and reasoning dropped with its reported count),
the whole prompt where nothing reported applies (`compacted`, then `append`), and each call's usage in
the AI SDK's convention (`observe`). Every call of the bundled sample must show the same total."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from helpers import ROOT

from calib.analysis.replay import replay
from calib.calibration.pipeline import run_fit
from calib.runtime import load
from calib.scoring.chain import AGENT_VERSION_SQL, appended_parts_sql
from calib.store.store import Store

_RESET_REASONS = ("compaction", "rewound")

# The text that left the context between call k-1 (the latest call with usage) and call k.
_REMOVED_SQL = """
SELECT ch.call_uid, p.part_uid, p.kind, p.text, coalesce(p.pruned_text, '') AS placeholder,
       (p.kind = 'reasoning' AND coalesce(oc.reasoning, 0) > 0) AS counted,
       p.call_uid AS owner, coalesce(oc.reasoning, 0) AS owner_reasoning
FROM call_chain ch
JOIN parts p ON p.session_uid = ch.session_uid AND p.pruned_at IS NOT NULL AND p.resent
  AND ((p.seq >= ch.prev_start AND p.seq < ch.prev_end) OR p.call_uid = ch.prev_uid)
  AND p.pruned_at > ch.prev_ts AND p.pruned_at <= ch.ts
LEFT JOIN calls oc ON oc.call_uid = p.call_uid
WHERE ch.prev_uid IS NOT NULL
"""
# Every part sent in a call, as sent then (a part pruned by the call's time is sent as its placeholder).
_FULL_SQL = """
SELECT ch.call_uid, p.seq, p.kind, p.call_uid IS NULL AS is_input,
       CASE WHEN p.pruned_at IS NOT NULL AND ch.ts IS NOT NULL AND p.pruned_at <= ch.ts
            THEN coalesce(p.pruned_text, '') ELSE p.text END AS sent_text
FROM call_chain ch
JOIN parts p ON p.session_uid = ch.session_uid AND p.resent
  AND p.seq >= ch.prompt_start AND p.seq < ch.prompt_end
ORDER BY ch.call_uid, p.seq
"""
_USAGE_SQL = """
SELECT call_uid, usage_style, usage_status, output, reasoning, carry, ctx FROM calls
"""


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = ROOT / "datasets" / "sample"
    if not folder.is_dir():
        pytest.skip(f"the bundled sample is not generated yet: {folder} (run `make sample`)")
    tmp = tmp_path_factory.mktemp("replay-tracker")
    db, config = tmp / "sample.duckdb", tmp / "calibration.json"
    run_fit([folder], db=db, out=config)
    return db, config


def _grouped(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        out[row["call_uid"]].append(row)
    return out


def _public_totals(store: Store, config: Path, calls: pl.DataFrame) -> dict[str, int]:
    """The total a tracker fed through its public methods shows before each call."""
    cal = load(str(config))
    appended = _grouped(store.query(appended_parts_sql("IS NOT NULL")).sort("call_uid", "seq").to_dicts())
    removed = _grouped(store.query(_REMOVED_SQL).to_dicts())
    full = _grouped(store.query(_FULL_SQL).to_dicts())
    usage = {r["call_uid"]: r for r in store.query(_USAGE_SQL).to_dicts()}
    # the agent's recorded version picks its static overhead (`TOOL@VERSION`)
    versions = dict(
        store.con.execute(
            f"SELECT session_uid, {AGENT_VERSION_SQL.format(meta='meta')} FROM sessions"
        ).fetchall()
    )
    shown: dict[str, int] = {}
    for (_,), session in calls.group_by("session_uid", maintain_order=True):
        tracker = None
        reported = False  # a call with usage since the session began or its history was rewritten
        appended_since: set[str] = set()  # parts and removals taken in since the latest report
        for row in session.iter_rows(named=True):
            agent = row["tool"] + ("/subagent" if row["is_subagent"] else "")
            if versions.get(row["session_uid"]):
                agent += f"@{versions[row['session_uid']]}"
            if tracker is None:
                tracker = cal.tracker(
                    row["provider"],
                    row["model"],
                    window=2**53 - 1,
                    output_reserve=0,
                    reasoning="include",
                    tool=agent,
                )
            if row["reason"] in _RESET_REASONS:
                reported = False
            uid = row["call_uid"]
            if not reported:
                # nothing reported applies: the whole prompt, estimated
                tracker.compacted()
                sent = full.get(uid, [])
                tracker.append(
                    [(p["kind"], p["sent_text"]) for p in sent], messages=sum(p["is_input"] for p in sent)
                )
            else:
                new = [p for p in appended.get(uid, []) if p["part_uid"] not in appended_since]
                appended_since.update(p["part_uid"] for p in new)
                tracker.append(
                    [(p["kind"], p["sent_text"]) for p in new], messages=sum(p["framed"] for p in new)
                )
                gone = [p for p in removed.get(uid, []) if "r" + p["part_uid"] not in appended_since]
                appended_since.update("r" + p["part_uid"] for p in gone)
                counted = {p["owner"]: p["owner_reasoning"] for p in gone if p["counted"]}
                texts = [p for p in gone if not p["counted"]]
                tracker.remove(
                    [(p["kind"], p["text"]) for p in texts],
                    [(p["kind"], p["placeholder"]) for p in texts],
                    tokens=sum(counted.values()),
                )
            shown[uid] = tracker.usage()["total"]
            u = usage[uid]
            if u["usage_status"] == "ok" and u["ctx"] is not None:
                output = u["output"] or 0
                reasoning = u["reasoning"] or 0
                visible = max(0, output - reasoning) if u["usage_style"] == "openai" else output
                carry = u["carry"] or 0
                vis = min(carry, visible)
                # the AI SDK's convention: output with its reasoning; the reasoning the recording re-sent
                tracker.observe(
                    {"inputTokens": u["ctx"], "outputTokens": carry, "reasoningTokens": carry - vis}
                )
                reported = True
                appended_since.clear()
    return shown


@pytest.mark.slow
def test_the_replay_of_a_calibration_shows_what_the_runtimes_tracker_shows(sample: tuple[Path, Path]) -> None:
    db, config = sample
    name = f"calibrated:{config}"
    with Store(db, read_only=True) as store:
        frame = replay(store, [name], rules=["own"], policies=["raw"], window="real")
        rows = frame.filter(pl.col("own")).sort("session_uid", "seq")
        assert rows.height > 500 and rows.get_column("estimator").unique().to_list() == [name]
        public = _public_totals(store, config, rows)
    replayed = dict(
        zip(rows.get_column("call_uid").to_list(), rows.get_column("displayed").to_list(), strict=True)
    )
    differ = {uid: (replayed[uid], public[uid]) for uid in replayed if replayed[uid] != public[uid]}
    assert not differ, (
        f"{len(differ)} of {len(replayed)} calls differ, e.g. {json.dumps(list(differ.items())[:5])}"
    )
    # both bases are exercised: whole-prompt estimates and estimates built on a report
    assert set(rows.get_column("basis").unique().to_list()) == {"full", "chained"}
