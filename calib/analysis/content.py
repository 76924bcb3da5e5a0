"""Content kinds: what the text appended between two calls is (CJK, JSON, code, tool output, prose).

Each part appended between two calls is classified by `content_kind`, in this order:

1. `cjk`: Chinese, Japanese or Korean characters (Han, kana, Hangul, CJK punctuation and full-width
   forms) are at least 10% of its non-space characters;
2. `json`: the text, stripped, starts with `{` or `[` and parses as JSON;
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

import json
import re
from typing import Any

import polars as pl

from calib.store.store import Store

__all__ = ["CONTENT_KINDS", "EMPTY_KIND", "appended_content", "content_kind"]

CONTENT_KINDS: tuple[str, ...] = ("tool_output", "code", "json", "prose", "cjk")
EMPTY_KIND = "empty"

_CJK = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]")
_SPACE = re.compile(r"\s")
_CODE_LINE = re.compile(
    r"""^\s*(?:
        (?:def|class|import|from|return|if|elif|else|for|while|try|except|finally|with|async|await|
           func|fn|let|const|var|function|package|pub|use|struct|impl|interface|type|export|enum|
           public|private|protected|static|switch|case|match|raise|throw|yield|select|insert|update|
           create|alter|drop)\b
      | (?:\#include|\#!|//|/\*|\*/|--\s|@\w)
      | (?:\d{1,6}[:|]\s?)            # a numbered line of a file listing or grep output
    )
    | [{};):]\s*$
    | ^\s*[}\])]
    """,
    re.VERBOSE | re.IGNORECASE,
)
_TOOL_KINDS = frozenset({"tool_result", "file"})


def content_kind(text: str, part_kind: str = "user_text") -> str:
    """The content kind of one appended part (see the module docstring for the rules)."""
    if not text:
        return "tool_output" if part_kind in _TOOL_KINDS else "prose"
    visible = len(text) - len(_SPACE.findall(text))
    if visible and len(_CJK.findall(text)) >= 0.1 * visible:
        return "cjk"
    stripped = text.strip()
    if stripped[:1] in "{[" and stripped[-1:] in "}]":
        try:
            json.loads(stripped)
        except ValueError:
            pass
        else:
            return "json"
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) >= 3 and sum(1 for line in lines if _CODE_LINE.search(line)) >= 0.4 * len(lines):
        return "code"
    return "tool_output" if part_kind in _TOOL_KINDS else "prose"


# What "appended between call k-1 and call k" means, and the text each part was sent as at call k's
# time, is the store's `appended_parts` view; the calls with a predecessor are `call_chain`'s.
_APPENDED_SQL = "SELECT call_uid, kind, sent_text FROM appended_parts ORDER BY call_uid, seq"
_CHAINED_CALLS_SQL = "SELECT call_uid FROM call_chain WHERE prev_uid IS NOT NULL ORDER BY call_uid"


def appended_content(store: Store) -> pl.DataFrame:
    """One row per call with a predecessor: `content_kind` (the kind with most appended characters,
    `empty` when none) and the appended characters of each kind (`chars_<kind>`)."""
    totals: dict[str, dict[str, int]] = {}
    for call_uid, part_kind, text in store.con.execute(_APPENDED_SQL).fetchall():
        kind = content_kind(text or "", part_kind)
        per_call = totals.setdefault(call_uid, dict.fromkeys(CONTENT_KINDS, 0))
        per_call[kind] += len(text or "")
    data: dict[str, list[Any]] = {"call_uid": [], "content_kind": []}
    data.update({f"chars_{k}": [] for k in CONTENT_KINDS})
    for (call_uid,) in store.con.execute(_CHAINED_CALLS_SQL).fetchall():
        per_call = totals.get(call_uid, dict.fromkeys(CONTENT_KINDS, 0))
        best = max(CONTENT_KINDS, key=lambda k: (per_call[k], -CONTENT_KINDS.index(k)))
        data["call_uid"].append(call_uid)
        data["content_kind"].append(best if per_call[best] else EMPTY_KIND)
        for k in CONTENT_KINDS:
            data[f"chars_{k}"].append(per_call[k])
    schema: dict[str, Any] = {"call_uid": pl.String, "content_kind": pl.String}
    schema.update(dict.fromkeys((f"chars_{k}" for k in CONTENT_KINDS), pl.Int64))
    return pl.DataFrame(data, schema=schema)
