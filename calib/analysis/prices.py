"""What each call cost, from the price table `genai-prices` ships (offline, pinned; nothing typed in here).

`genai-prices` (PyPI, maintained by the pydantic team) holds every provider's and model's prices per
million tokens: input, output, cache reads and cache writes (5-minute and 1-hour), with their history
and their tiers (some models cost more per token once a prompt passes 200k tokens). calib reads the
snapshot bundled with the installed package and never calls its updater, which would fetch a newer
table over the network; `calib cost` names the package version it priced with.

A call is priced alone, from the counts its log recorded (a tier depends on that call's prompt):

- input: the whole prompt, `ctx` (cache reads and writes included, as genai-prices counts input);
- cache reads and cache writes as recorded; where the raw usage splits the writes by lifetime (Claude
  Code's `cache_creation.ephemeral_5m_input_tokens` / `ephemeral_1h_input_tokens`), each is priced at
  its own rate. A call that recorded no cache field at all is priced as uncached, and counted as such;
- output as billed: `output` plus `reasoning` where the usage reports thoughts apart from the output
  (Gemini style, and the Anthropic-style records of OpenCode and Dexto), `output` alone where it
  already holds them (OpenAI style, Claude Code).

A call whose model the table does not know (nor its provider, where the model name alone does not
find it) gets its tokens and no dollars; the models are listed.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from typing import Any

import polars as pl

from calib.core.errors import UsageError

DISTRIBUTION = "genai-prices"
HINT = "pip install 'genai-prices==0.2.3'"

# The call columns a price is made from (`calls` joined with its session), and the columns added.
PRICE_INPUT_COLUMNS = (
    "provider",
    "model",
    "ts",
    "usage_style",
    "ctx",
    "output",
    "reasoning",
    "cache_read",
    "cache_write",
    "cache_write_5m",
    "cache_write_1h",
)


def package_version() -> str:
    """The installed genai-prices version (the price table's), or raise with what to install."""
    if importlib.util.find_spec("genai_prices") is None:
        raise UsageError("pricing needs the genai-prices package, which is not installed", hint=HINT)
    return importlib.metadata.version(DISTRIBUTION)


def billed_output(style: str | None, output: int | None, reasoning: int | None) -> int | None:
    """The output tokens a call is billed for: reasoning reported apart is billed as output too."""
    if output is None:
        return None
    if style == "openai":
        return output
    return output + (reasoning or 0)


@dataclass
class PriceBook:
    """genai-prices' table, looked up once per (provider, model): `price` prices one call."""

    _found: dict[tuple[str | None, str], Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        package_version()
        from genai_prices.data_snapshot import get_snapshot

        self._snapshot = get_snapshot()

    def _lookup(self, provider: str | None, model: str) -> Any:
        key = (provider, model)
        if key not in self._found:
            found = None
            # the provider first (a model name can match several); then the model name alone, for an
            # agent's own provider name (OpenCode's `opencode`, a gateway) the table does not hold
            for provider_id in dict.fromkeys([provider, None]):
                try:
                    found = self._snapshot.find_provider_model(model, None, provider_id, None)
                    break
                except LookupError:
                    continue
            self._found[key] = found
        return self._found[key]

    def price(self, row: dict[str, Any], output: int | None) -> tuple[Decimal, Decimal, str] | None:
        """(input dollars, output dollars, the table's model id) of one call billed `output` tokens
        (`billed_output`), or None without a price."""
        from genai_prices import Usage

        model, ctx = row.get("model"), row.get("ctx")
        if ctx is None or output is None:
            return None  # no usage: nothing billed that the log shows
        found = self._lookup(row.get("provider"), model) if model else None
        if found is None:
            return None
        provider, info = found
        counts: dict[str, int] = {"input_tokens": ctx, "output_tokens": output}
        if row.get("cache_read") is not None:
            counts["cache_read_tokens"] = row["cache_read"]
        write = row.get("cache_write")
        if write is not None:
            counts["cache_write_tokens"] = write
            five, hour = row.get("cache_write_5m"), row.get("cache_write_1h")
            if five is not None and hour is not None and five + hour == write:
                counts["cache_write_5m_tokens"], counts["cache_write_1h_tokens"] = five, hour
        ts = row.get("ts")
        when = ts.replace(tzinfo=UTC) if isinstance(ts, datetime) else None
        calc = info.calc_price(
            Usage(**counts),
            provider,
            genai_request_timestamp=when or datetime.now(UTC),
            auto_update_timestamp=None,
        )
        return calc.input_price, calc.output_price, f"{provider.id}/{info.id}"


@cache
def price_book() -> PriceBook:
    """The process's `PriceBook`: its lookups are kept from one call of `price_calls` to the next."""
    return PriceBook()


def price_calls(calls: pl.DataFrame) -> pl.DataFrame:
    """`calls` (with `PRICE_INPUT_COLUMNS`) with each call's billed `output_tokens`, its `usd`,
    `usd_input` and `usd_output` (null where the table has no price for its model or it has no usage),
    `priced_as` (the table's provider/model) and `uncached` (it recorded no cache field, so it is
    priced as all uncached)."""
    book = price_book()
    usd_in: list[float | None] = []
    usd_out: list[float | None] = []
    names: list[str | None] = []
    billed: list[int | None] = []
    for row in calls.select(PRICE_INPUT_COLUMNS).iter_rows(named=True):
        billed.append(billed_output(row["usage_style"], row["output"], row["reasoning"]))
        price = book.price(row, billed[-1])
        usd_in.append(float(price[0]) if price else None)
        usd_out.append(float(price[1]) if price else None)
        names.append(price[2] if price else None)
    return calls.with_columns(
        pl.Series("output_tokens", billed, dtype=pl.Int64),
        pl.Series("usd_input", usd_in, dtype=pl.Float64),
        pl.Series("usd_output", usd_out, dtype=pl.Float64),
        pl.Series("priced_as", names, dtype=pl.String),
    ).with_columns(
        (pl.col("usd_input") + pl.col("usd_output")).alias("usd"),
        (
            pl.col("ctx").is_not_null() & pl.col("cache_read").is_null() & pl.col("cache_write").is_null()
        ).alias("uncached"),
    )
