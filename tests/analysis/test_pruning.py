"""What-if pruning (`calib.analysis.pruning`) on sessions whose every count is known (see
`test_removals`: the calibration counts `len(text) / 4`, the usage is written by hand)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import MINUTE, T0, SessionBuilder, chars4_config

from calib.analysis.context import load_calibration
from calib.analysis.prices import price_book
from calib.analysis.pruning import (
    COLUMNS,
    PLACEHOLDER,
    Policy,
    parse_policy,
    summarise_what_if,
    what_if_pruning,
)
from calib.core.errors import UsageError
from calib.core.records import ParsedSession
from calib.store.store import Store

# the placeholder as the calibration counts it: round(33 / 4)
HOLDER = round(len(PLACEHOLDER) / 4)


def _two_turns() -> ParsedSession:
    """A 2,000-token tool output in user turn 1, then turns 2 and 3; Anthropic caching."""
    b = SessionBuilder("test:turns", "anthropic", "claude-sonnet-4-5", "anthropic")
    b.part("user_text", 100)
    b.call(0, 0, 1100, 0, 1100)
    b.part("assistant_text", 40, by=0)
    b.part("tool_result", 2000)
    b.call(0, 1, 3140, 1100, 2040)
    b.part("assistant_text", 40, by=1)
    b.part("user_text", 100)
    b.call(0, 2, 3280, 3140, 140)
    b.part("assistant_text", 40, by=2)
    b.part("user_text", 100)
    b.call(0, 3, 3420, 3280, 140)
    return b.session()


def _big_outputs() -> ParsedSession:
    """Three 25,000-token tool outputs in turn 1, then turns 2, 3 and 4 (OpenAI, no cache fields)."""
    b = SessionBuilder("test:big", "openai", "gpt-5", "openai")
    b.part("user_text", 10)
    b.call(0, 0, 510, None, None)
    ctx = 510
    for k in range(3):
        b.part("assistant_text", 40, by=k)
        b.part("tool_result", 25_000)
        ctx += 40 + 25_000
        b.call(0, k + 1, ctx, None, None)
    for turn in range(3):
        b.part("assistant_text", 40, by=3 + turn)
        b.part("user_text", 10)
        ctx += 50
        b.call(0, 4 + turn, ctx, None, None)
    return b.session()


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, Any]]:
    root = tmp_path_factory.mktemp("pruning")
    config = chars4_config(root / "calibration.json")
    with Store(root / "calib.duckdb") as store:
        store.write([_two_turns(), _big_outputs()])
        policies = [parse_policy("older-than:1"), parse_policy("opencode")]
        frame = what_if_pruning(store, load_calibration(config)[1], policies)
    assert frame.columns == list(COLUMNS)
    return {(r["session"], r["policy"]): r for r in frame.to_dicts()}


def _usd(minute: float, ctx: int, read: int, write: int) -> float:
    row = {"provider": "anthropic", "model": "claude-sonnet-4-5", "ctx": ctx, "cache_read": read,
           "cache_write": write, "ts": T0 + minute * MINUTE}  # fmt: skip
    price = price_book().price(row, 40)
    assert price is not None
    return float(price[0] + price[1])


def test_older_than_one_turn_prunes_before_the_next_turn_and_pays_the_cache_back(
    replayed: dict[tuple[str, str], dict[str, Any]],
) -> None:
    row = replayed[("test:turns", "older-than:1")]
    saved = 2000 - HOLDER
    assert (row["calls"], row["prunes"], row["outputs_pruned"], row["tokens_pruned"]) == (4, 1, 1, saved)
    # call 2: the cache reads stop at the pruned output (1,000 + 100 + 40 tokens in), the rest of the
    # smaller prompt is written; call 3 reads `saved` tokens fewer
    assert row["net_cache_read"] == (3140 - 1140) + saved
    assert row["net_cache_write"] == 140 - (3280 - saved - 1140)
    assert row["net_uncached"] == 0
    assert row["net_tokens"] == 2 * saved
    expected = (
        _usd(2, 3280, 3140, 140)
        - _usd(2, 3280 - saved, 1140, 3280 - saved - 1140)
        + _usd(3, 3420, 3280, 140)
        - _usd(3, 3420 - saved, 3280 - saved, 140)
    )
    assert row["net_usd"] == pytest.approx(expected, abs=1e-6)
    # OpenCode's own policy keeps the newest 40,000 tokens of tool output: this session has far less
    assert replayed[("test:turns", "opencode")]["prunes"] == 0


def test_opencode_keeps_the_newest_40k_and_the_two_newest_turns(
    replayed: dict[tuple[str, str], dict[str, Any]],
) -> None:
    row = replayed[("test:big", "opencode")]
    # at turn 3 the newest two turns (1 and 2) are protected; at turn 4 the walk back from turn 1's
    # newest output passes 40,000 on the second: the two older outputs go (50,000 > 20,000)
    assert (row["prunes"], row["outputs_pruned"]) == (1, 2)
    assert row["tokens_pruned"] == 2 * (25_000 - HOLDER)
    # no cache fields: the savings come off uncached input, on turn 4's one call
    assert row["net_uncached"] == row["net_tokens"] == 2 * (25_000 - HOLDER)
    assert row["net_cache_read"] == row["net_cache_write"] == 0
    # every output older than one turn goes at turn 2 (all three), once
    every = replayed[("test:big", "older-than:1")]
    assert (every["prunes"], every["outputs_pruned"]) == (1, 3)
    assert every["net_tokens"] == 3 * (25_000 - HOLDER) * 3  # calls of turns 2, 3 and 4


def test_the_summary_counts_sessions_where_it_paid_off(
    replayed: dict[tuple[str, str], dict[str, Any]],
) -> None:
    import polars as pl

    rows = summarise_what_if(pl.DataFrame(list(replayed.values())))
    older = next(r for r in rows if r["policy"] == "older-than:1")
    assert (older["sessions"], older["pruned_sessions"]) == (2, 2)
    assert older["paid_off"] + older["lost"] == 2
    assert older["net_tokens"] == sum(r["net_tokens"] for k, r in replayed.items() if k[1] == "older-than:1")


def test_policies_are_parsed_or_refused() -> None:
    assert parse_policy("opencode") == Policy("opencode")
    assert parse_policy("older-than:3").label == "older-than:3"
    for wrong in ("older-than:0", "older-than", "newest"):
        with pytest.raises(UsageError, match="unknown pruning policy"):
            parse_policy(wrong)


def test_the_cli_shows_the_what_if_table(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from calib.cli.app import app

    config = chars4_config(tmp_path / "calibration.json")
    with Store(tmp_path / "calib.duckdb") as store:
        store.write([_two_turns()])
    args = [
        "savings",
        "--db",
        str(tmp_path / "calib.duckdb"),
        "--config",
        str(config),
        "--what-if",
        "older-than:1",
    ]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "what-if pruning" in result.stdout and "older-than:1" in result.stdout
    result = CliRunner().invoke(app, [*args, "--json"])
    doc = json.loads(result.stdout)
    assert doc["what_if"]["summary"][0]["policy"] == "older-than:1"
    result = CliRunner().invoke(app, [*args[:-1], "older-than:x"])
    assert result.exit_code == 2 and "unknown pruning policy 'older-than:x'" in result.output
