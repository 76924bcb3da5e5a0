"""Removals on synthetic sessions with a known truth: what left the context between two calls is
estimated, and the prediction then matches the provider's count as closely as the appended text does.

Each removal kind the synthetic writers produce in an agent's real layout: a tool output pruned to a
placeholder (OpenCode 1.x and 2, Dexto) and reasoning dropped at a new user turn (Codex). The truth
rule of each session (base estimator, ratio, per-message overhead) prices the counts; the only
difference left is the rounding of each part to whole tokens.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from calib.ingest.pipeline import ingest
from calib.scoring.chain import FAMILIES, REMOVAL_KINDS, feature_column, features
from calib.store.store import Store
from calib.synth import write_sample

CASES = [
    ("opencode", "opencode-db", "pruned"),
    ("opencode", "opencode2-db", "pruned"),
    ("dexto", "dexto-db", "pruned"),
    ("codex", "codex-jsonl", "reasoning"),
]
GROUPS = ("model", "tool", "user")


def _removal_calls(tmp_path: Path, tool: str, layout: str) -> tuple[pl.DataFrame, dict[str, dict]]:
    sample = write_sample(tool, tmp_path / "data", layout=layout, sessions=12, seed=71)
    truth = json.loads(sample.truth.read_text(encoding="utf-8"))["session_truth"]
    store = Store(tmp_path / "calib.duckdb")
    outcome = ingest([tmp_path / "data"], store=store)
    assert outcome.ok, [str(e) for e in outcome.errors]
    frame = features(store, sorted({s["base"] for s in truth}))
    native = dict(store.con.execute("SELECT session_uid, native_id FROM sessions").fetchall())
    by_native = {s["id"]: s for s in truth}
    rules = {uid: by_native[nid] for uid, nid in native.items() if nid in by_native}
    store.close()
    return frame, rules


@pytest.mark.parametrize(("tool", "layout", "kind"), CASES)
def test_each_removal_kind_is_estimated_to_the_truth(
    tmp_path: Path, tool: str, layout: str, kind: str
) -> None:
    frame, rules = _removal_calls(tmp_path, tool, layout)
    assert set(frame["removal"].drop_nulls()) <= set(REMOVAL_KINDS)
    assert set(frame["family"].drop_nulls()) == set(FAMILIES)
    removed = frame.filter(pl.col("removal") == kind)
    # a removal placed between two calls never breaks the chain by itself, nor looks like an
    # unexplained drop (a compaction or a call without usage at the same time still breaks it)
    assert removed.filter(pl.col("reason").is_in(["pruned", "negative_delta"])).is_empty()
    removed = removed.filter(pl.col("status") == "ok")
    assert removed.height >= 2, f"the sample has too few scored {kind} removals to test"
    for row in removed.iter_rows(named=True):
        rule = rules[row["session_uid"]]
        base, ratio, overhead = rule["base"], rule["ratio"], rule["per_message_overhead"]
        appended = sum(row[feature_column("a", base, g)] for g in GROUPS)
        text_left = sum(row[feature_column("r", base, g)] for g in GROUPS)
        estimate = ratio * (appended - text_left) + overhead * row["messages"] - row["removed_known"]
        # each part is rounded to whole tokens by the truth rule: half a token per part at most
        slack = 0.5 * (row["parts"] + 2) + 1
        assert abs(estimate - row["delta"]) <= slack, (row["session_uid"], row["seq"], estimate, row["delta"])
        if kind == "reasoning":
            assert row["removed_known"] > 0
        else:
            assert text_left > 0
