"""What a recorded message holds, read as values: timestamps, thought summaries and API Parts.

- Thought summaries become `reasoning` parts (`resent=False`), one per thought, with the text gemini-cli
  parsed them from rebuilt: `**<subject>**\\n\\n<description>` (subject only: `**<subject>**`; no
  subject: the description).
- `inlineData` / `fileData` parts become `file` parts whose text is a placeholder:
  `[inlineData <mime>, <decoded bytes> bytes]` or `[fileData <mime>, <uri>]` (no size is recorded).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from calib.importers.common import compact_json

# A summary of the conversation so far, as gemini-cli's compression writes it into a user turn.
SNAPSHOT = "<state_snapshot>"


def thought_text(thought: Any) -> str:
    """The text of one thought summary, rebuilt from its subject and description."""
    if not isinstance(thought, dict):
        return thought if isinstance(thought, str) else compact_json(thought)
    subject = thought.get("subject") or ""
    description = thought.get("description") or ""
    if subject and description:
        return f"**{subject}**\n\n{description}"
    if subject:
        return f"**{subject}**"
    return str(description)


def _file_placeholder(key: str, blob: Any) -> str:
    if not isinstance(blob, dict):
        return f"[{key}]"
    mime = blob.get("mimeType") or "unknown"
    if key == "inlineData":
        data = blob.get("data")
        size = 0
        if isinstance(data, str) and data:
            try:
                size = len(base64.b64decode(data, validate=False))
            except (binascii.Error, ValueError):
                size = len(data) * 3 // 4
        return f"[inlineData {mime}, {size} bytes]"
    return f"[fileData {mime}, {blob.get('fileUri') or 'no uri'}]"


def as_parts(content: Any) -> list[Any]:
    """A PartListUnion (string, Part, or list of either) as a list."""
    if content is None:
        return []
    if isinstance(content, list):
        return content
    return [content]


def has_function_response(message: dict[str, Any]) -> bool:
    """True when the message's content holds a `functionResponse` Part (a tool-result turn)."""
    content = message.get("content")
    if not isinstance(content, list):
        return False
    return any(isinstance(p, dict) and "functionResponse" in p for p in content)


def tool_result_text(response: Any) -> str:
    """The part text of a `functionResponse.response`: its `output` string when that is all it holds,
    else its compact JSON."""
    if isinstance(response, dict) and len(response) == 1 and isinstance(response.get("output"), str):
        return response["output"]
    return compact_json(response)


def text_of(part: Any) -> str:
    """The text of a string or text Part ("" for any other Part)."""
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and isinstance(part.get("text"), str):
        return str(part["text"])
    return ""


def api_part(
    item: dict[str, Any], text_kind: str, skip_function_calls: bool
) -> tuple[str, str, str | None, bool] | None:
    """(kind, text, tool name, resent) of one Gemini API Part, or None when it sends nothing."""
    if "functionResponse" in item:
        response = item["functionResponse"] or {}
        return "tool_result", tool_result_text(response.get("response")), response.get("name"), True
    if "functionCall" in item:
        if skip_function_calls:  # the message's toolCalls already hold these calls
            return None
        call = item["functionCall"] or {}
        return "tool_call", compact_json(call.get("args") or {}), call.get("name"), True
    if "inlineData" in item or "fileData" in item:
        key = "inlineData" if "inlineData" in item else "fileData"
        return "file", _file_placeholder(key, item[key]), None, True
    if "text" in item:
        text = item["text"]
        if not isinstance(text, str) or not text:
            return None
        if item.get("thought") is True:
            return "reasoning", text, None, False
        return text_kind, text, None, True
    if set(item) <= {"thoughtSignature", "thought"}:
        return None
    return text_kind, compact_json(item), None, True
