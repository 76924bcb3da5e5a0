"""Content kinds: what the text appended between two calls is (CJK, JSON, code, tool output, prose).

Each part appended between two calls is classified by `content_kind`, in this order:

1. `cjk`: Chinese, Japanese or Korean characters (Han, kana, Hangul, CJK punctuation and full-width
   forms) are at least 10% of its non-space characters;
2. `json`: the text, stripped, starts with `{` or `[` and parses as JSON (RFC 8259, as orjson reads
   it: no `NaN` or `Infinity`, numbers that fit a double, nested at most 1,024 levels; orjson counts
   the levels instead of recursing, so text nested thousands deep is simply not JSON here);
3. `code`: at least 3 non-blank lines, and at least 40% of them look like source code (start with a
   common keyword such as `def`, `import`, `func`, `const`, a comment marker or a line number of a
   file listing, or end with `{`, `}`, `;`, `)` or `:`);
4. `tool_output`: any other tool result or attached file (logs, listings, test runs, messages);
5. `prose`: anything else (user messages, summaries, model text).

A call's content kind is the kind holding the most characters among its appended parts (`empty` when
nothing was appended), and the report's error figures per kind are over the scored calls of that kind:
this measures what the provider counted, per call, rather than pretending to split a delta among parts.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
import polars as pl

from calib.scoring.chain import appended_parts_sql, piece_condition
from calib.store.store import Store, release_cache

__all__ = ["CONTENT_KINDS", "EMPTY_KIND", "ContentKinds", "appended_content", "content_kind"]

CONTENT_KINDS: tuple[str, ...] = ("tool_output", "code", "json", "prose", "cjk")
EMPTY_KIND = "empty"

_CJK = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]")
_SPACE = re.compile(r"\s")
# A line looks like code when it starts (after indentation) with one of these, ends with one of
# `_CODE_ENDS` or starts with one of `_CODE_STARTS` (trailing and leading whitespace aside). The pattern
# is only ever matched at the line's start: tried at every position (the line end's test as a regex
# alternative), it took half the time of classifying the 1x scale corpus's texts (1.9 s against 1.0 s).
_CODE_START = re.compile(
    r"""\s*(?:
        (?:def|class|import|from|return|if|elif|else|for|while|try|except|finally|with|async|await|
           func|fn|let|const|var|function|package|pub|use|struct|impl|interface|type|export|enum|
           public|private|protected|static|switch|case|match|raise|throw|yield|select|insert|update|
           create|alter|drop)\b
      | (?:\#include|\#!|//|/\*|\*/|--\s|@\w)
      | (?:\d{1,6}[:|]\s?)            # a numbered line of a file listing or grep output
    )
    """,
    re.VERBOSE | re.IGNORECASE,
)
_CODE_ENDS = frozenset("{};):")
_CODE_STARTS = frozenset("}])")
_TOOL_KINDS = frozenset({"tool_result", "file"})


def content_kind(text: str, part_kind: str = "user_text") -> str:
    """The content kind of one appended part (see the module docstring for the rules)."""
    if not text:
        return "tool_output" if part_kind in _TOOL_KINDS else "prose"
    # an ASCII text has no CJK character (and skips counting its spaces)
    if not text.isascii():
        visible = len(text) - len(_SPACE.findall(text))
        if visible and len(_CJK.findall(text)) >= 0.1 * visible:
            return "cjk"
    stripped = text.strip()
    if stripped[:1] in "{[" and stripped[-1:] in "}]":
        try:
            orjson.loads(stripped)
        except orjson.JSONDecodeError:
            pass
        else:
            return "json"
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) >= 3 and _mostly_code(lines):
        return "code"
    return "tool_output" if part_kind in _TOOL_KINDS else "prose"


def _mostly_code(lines: list[str]) -> bool:
    """Whether at least 40% of the lines look like code (stops as soon as the answer is known)."""
    need = 0.4 * len(lines)
    hits = 0
    left = len(lines)
    match = _CODE_START.match
    for line in lines:
        left -= 1
        if line.rstrip()[-1:] in _CODE_ENDS or line.lstrip()[:1] in _CODE_STARTS or match(line):
            hits += 1
            if hits >= need:
                return True
        elif hits + left < need:
            return False
    return hits >= need


# What "appended between call k-1 and call k" means, and the text each part was sent as at call k's
# time, is the store's `appended_parts` view (read as `appended_parts_sql`, in time linear in a
# session's length); the calls with a predecessor are `call_chain`'s.
def _appended_sql(scope: str, calls: str = "") -> str:
    return f"SELECT call_uid, kind, sent_text FROM ({appended_parts_sql(scope, calls)})"


_CHAINED_CALLS_SQL = "SELECT call_uid FROM call_chain WHERE prev_uid IS NOT NULL ORDER BY call_uid"
# Appended parts classified per batch: their texts are all the texts held at a time.
_TEXT_BATCH = 1_000
_CHARS = [f"chars_{k}" for k in CONTENT_KINDS]


def _dominant_kind() -> pl.Expr:
    """`content_kind` of a call from its `chars_<kind>` columns: the kind with the most characters (the
    first of `CONTENT_KINDS` on a tie), `empty` when it appended none."""
    best_kind: pl.Expr = pl.lit(CONTENT_KINDS[0])
    best = pl.col(_CHARS[0])
    for kind, column in zip(CONTENT_KINDS[1:], _CHARS[1:], strict=True):
        more = pl.col(column) > best
        best_kind = pl.when(more).then(pl.lit(kind)).otherwise(best_kind)
        best = pl.when(more).then(pl.col(column)).otherwise(best)
    return pl.when(best > 0).then(best_kind).otherwise(pl.lit(EMPTY_KIND)).alias("content_kind")


class ContentKinds:
    """The appended characters of each kind per call, for some sessions at a time: their parts' texts
    are read a batch of `_TEXT_BATCH` parts at a time, classified (`content_kind`) and dropped, so no
    more than a batch of texts is ever in memory. It reads on a cursor of its own (close it, or use a
    `with` block)."""

    def __init__(self, store: Store) -> None:
        self._con = store.con.cursor()

    def __enter__(self) -> ContentKinds:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the cursor."""
        self._con.close()

    def for_sessions(self, first: str, last: str, seqs: tuple[int, int] | None = None) -> pl.DataFrame:
        """The calls of the sessions whose uid sorts from `first` to `last` that were appended parts:
        `call_uid`, `content_kind` and `chars_<kind>` (a call with a predecessor and nothing appended is
        `empty` with 0 characters); with `seqs`, only from call `seqs[0]` of `first` to call `seqs[1]`
        of `last` (a batch that begins or ends inside a long session)."""
        # a plain range of uids, which DuckDB pushes into the scans
        calls = "" if seqs is None else piece_condition(first, seqs[0], last, seqs[1])
        kinds = _with_kind(
            self._sums(_appended_sql(f"BETWEEN {_literal(first)} AND {_literal(last)}", calls))
        )
        release_cache(self._con)  # the texts just read are not read again
        return kinds

    def calls(self) -> pl.DataFrame:
        """`appended_content` of the store."""
        sums = self._sums(_appended_sql("IS NOT NULL"))
        chained = self._con.execute(_CHAINED_CALLS_SQL).pl()
        rows = chained.join(sums, on="call_uid", how="left").with_columns(pl.col(_CHARS).fill_null(0))
        return _with_kind(rows)

    def _sums(self, sql: str) -> pl.DataFrame:
        totals: dict[str, list[int]] = {}
        index = {kind: i for i, kind in enumerate(CONTENT_KINDS)}
        result = self._con.execute(sql)
        # to_arrow_reader replaces fetch_record_batch in duckdb 1.4
        fetch = getattr(result, "to_arrow_reader", None) or result.fetch_record_batch
        for batch in fetch(_TEXT_BATCH):
            calls = batch.column(0).to_pylist()
            part_kinds = batch.column(1).to_pylist()
            texts = batch.column(2).to_pylist()
            for call_uid, part_kind, text in zip(calls, part_kinds, texts, strict=True):
                per_call = totals.get(call_uid)
                if per_call is None:
                    per_call = totals[call_uid] = [0] * len(CONTENT_KINDS)
                per_call[index[content_kind(text or "", part_kind)]] += len(text or "")
            del texts
        data: dict[str, Any] = {"call_uid": list(totals)}
        for i, column in enumerate(_CHARS):
            data[column] = [per_call[i] for per_call in totals.values()]
        return pl.DataFrame(data, schema={"call_uid": pl.String, **dict.fromkeys(_CHARS, pl.Int64)})


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _with_kind(rows: pl.DataFrame) -> pl.DataFrame:
    schema = pl.Schema({"call_uid": pl.String, **dict.fromkeys(_CHARS, pl.Int64)})
    return rows.cast(schema).with_columns(_dominant_kind()).select("call_uid", "content_kind", *_CHARS)


def appended_content(store: Store) -> pl.DataFrame:
    """One row per call with a predecessor: `content_kind` (the kind with most appended characters,
    `empty` when none) and the appended characters of each kind (`chars_<kind>`)."""
    with ContentKinds(store) as kinds:
        return kinds.calls()
