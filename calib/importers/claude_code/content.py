"""What the model saw of one line: its content blocks as (kind, text, tool) entries.

- User lines: a string content, or a `text` block, is `user_text` (`isMeta` injections too: skill
  bodies, command caveats are sent as user text); the line flagged `isCompactSummary` is the
  compaction `summary`. A `tool_result` block is a `tool_result` whose text is its string content, or
  its `text` blocks joined by newlines (`toolUseResult` beside it is the UI's structured copy, not what
  the model saw). Other blocks inside a result (`tool_reference`, ...) are kept as their compact JSON.
- Images (`image` blocks, in a user line or inside a tool result) are `file` parts with a short
  placeholder, `[image <media type>, <decoded bytes> bytes]`: the bytes are not text, and Entire's
  copies replace the data by `REDACTED` anyway. `document` blocks likewise (`[document <media type>]`).
- Assistant lines (one content block per line): `text` is `assistant_text`, `thinking` is `reasoning`
  (re-sent: current Claude models keep earlier thinking in context and `output_tokens` counts it),
  `redacted_thinking` is `reasoning` with its placeholder text, `tool_use` is a `tool_call` whose text is
  the compact JSON of its `input`.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from calib.importers.common import compact_json

# (kind, text, tool_use id or None, tool name or None)
Entry = tuple[str, str, str | None, str | None]


def _media(block: dict[str, Any], what: str) -> str:
    source = block.get("source")
    if not isinstance(source, dict):
        return f"[{what}]"
    mime = source.get("media_type") or source.get("type") or "unknown"
    data = source.get("data")
    if isinstance(data, str) and source.get("type") == "base64":
        try:
            size = len(base64.b64decode(data, validate=False))
        except (binascii.Error, ValueError):
            size = len(data) * 3 // 4
        return f"[{what} {mime}, {size} bytes]"
    return f"[{what} {mime}]"


def media_text(block: dict[str, Any]) -> str | None:
    """The placeholder of an image or document block (None for any other block)."""
    kind = block.get("type")
    if kind == "image":
        return _media(block, "image")
    if kind == "document":
        return _media(block, "document")
    return None


def result_entries(block: dict[str, Any]) -> list[Entry]:
    """A `tool_result` block: its text as one `tool_result` entry, then one `file` entry per image."""
    tool_id = block.get("tool_use_id") if isinstance(block.get("tool_use_id"), str) else None
    content = block.get("content")
    files: list[Entry] = []
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list):
        texts = []
        for item in content:
            if not isinstance(item, dict):
                texts.append(item if isinstance(item, str) else compact_json(item))
                continue
            placeholder = media_text(item)
            if placeholder is not None:
                files.append(("file", placeholder, tool_id, None))
            elif item.get("type") == "text" and isinstance(item.get("text"), str):
                texts.append(item["text"])
            else:
                texts.append(compact_json(item))
        text = "\n".join(texts)
    else:
        text = compact_json(content)
    return [("tool_result", text, tool_id, None), *files]


def user_entries(content: Any, summary: bool) -> list[Entry]:
    """The entries of a user line's `message.content` (`summary`: the compaction summary line)."""
    text_kind = "summary" if summary else "user_text"
    if isinstance(content, str):
        return [(text_kind, content, None, None)] if content else []
    if not isinstance(content, list):
        return []
    out: list[Entry] = []
    for block in content:
        if isinstance(block, str):
            if block:
                out.append((text_kind, block, None, None))
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str) and text:
                out.append((text_kind, text, None, None))
        elif kind == "tool_result":
            out.extend(result_entries(block))
        else:
            placeholder = media_text(block)
            out.append(
                ("file", placeholder, None, None)
                if placeholder
                else (text_kind, compact_json(block), None, None)
            )
    return out


def assistant_entries(content: Any) -> list[Entry]:
    """The entries of an assistant line's `message.content` (normally one block)."""
    if isinstance(content, str):
        return [("assistant_text", content, None, None)] if content else []
    if not isinstance(content, list):
        return []
    out: list[Entry] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str) and text:
                out.append(("assistant_text", text, None, None))
        elif kind == "thinking":
            text = block.get("thinking")
            if isinstance(text, str) and text:
                out.append(("reasoning", text, None, None))
        elif kind == "redacted_thinking":
            out.append(("reasoning", "[redacted thinking]", None, None))
        elif kind in ("tool_use", "server_tool_use"):
            tool_id = block.get("id") if isinstance(block.get("id"), str) else None
            name = block.get("name") if isinstance(block.get("name"), str) else None
            args = block.get("input")
            out.append(("tool_call", compact_json(args if args is not None else {}), tool_id, name))
        else:
            out.append(("assistant_text", compact_json(block), None, None))
    return out


def output_chars(content: Any) -> tuple[int, int]:
    """(characters of text, thinking and tool input JSON, number of tool_use blocks) of a line."""
    chars = tools = 0
    for kind, text, _, _ in assistant_entries(content):
        chars += len(text)
        if kind == "tool_call":
            tools += 1
    return chars, tools
