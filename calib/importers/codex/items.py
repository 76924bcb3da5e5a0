"""What the model saw: a `response_item` (a Responses-API item) as parts, and the usage of a `token_count`.

Parts come from `response_item`s only; `event_msg`s (`user_message`, `agent_message`, ...) repeat them
for the UI and would count the same text twice.

- `message`: one part per text content item. Role `user` -> `user_text`; `developer` (and `system`)
  -> `system` (role system): Codex's permission, sandbox and collaboration-mode instructions, prompt
  text the agent adds, like the system prompt; `assistant` -> `assistant_text` (model output). An
  `input_image` is a `file` part with empty text (image tokens are not text an estimator could count).
- `reasoning` -> `reasoning`: its summary texts, then its `content` texts, then `encrypted_content`,
  one per line. A reasoning item with nothing recorded (no summary, content or blob, as some builds
  write it) still yields a reasoning part, with empty text: the model reasoned (its tokens are in
  the call's output and carry) and Codex passed the item back, so the part is what the next turn's
  start prunes.
- `function_call` -> `tool_call` (text: `arguments` as recorded), `custom_tool_call` -> `tool_call`
  (text: the freeform `input`), `web_search_call` / `local_shell_call` -> `tool_call` (compact JSON
  of `action`), `tool_search_call` -> `tool_call` (compact JSON of `arguments`).
- `function_call_output` / `custom_tool_call_output` -> `tool_result` (text: `output` when a string,
  the texts of its content items when a list, its `content` when an object holding one);
  `tool_search_output` -> `tool_result` (compact JSON of `tools`).
- `compaction` (inside `compacted.replacement_history`) -> `summary` (its `encrypted_content`).
Any other item type yields no part and is counted by the builder (`unknown_items`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from calib.core.usage import token_counts
from calib.importers.common import compact_json

# Item types the model produces (they belong to the call whose usage is recorded next).
OUTPUT_TYPES = frozenset(
    (
        "reasoning",
        "function_call",
        "custom_tool_call",
        "web_search_call",
        "tool_search_call",
        "local_shell_call",
    )
)
_TEXT_ITEMS = ("input_text", "output_text", "text", "summary_text", "reasoning_text")
USAGE_FIELDS = (
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "total_tokens",
)


class Spec(NamedTuple):
    """One part an item yields: wire role, kind, text, tool name, item id, and whether the model made it."""

    role: str
    kind: str
    text: str
    tool_name: str | None
    item_id: str | None
    output: bool


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    out = []
    for item in content:
        if isinstance(item, str):
            out.append(item)
        elif (
            isinstance(item, dict)
            and item.get("type", "text") in _TEXT_ITEMS
            and isinstance(item.get("text"), str)
        ):
            out.append(item["text"])
    return out


def output_text(output: Any) -> str:
    """The text of a tool output as the model was sent it."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(_texts(output))
    if isinstance(output, dict) and isinstance(output.get("content"), str):
        return output["content"]
    return "" if output is None else compact_json(output)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else compact_json(value)


def reasoning_text(item: dict[str, Any]) -> str:
    """The text a `reasoning` item holds: summaries, content, then the encrypted blob, one per line."""
    pieces = _texts(item.get("summary")) + _texts(item.get("content"))
    blob = item.get("encrypted_content")
    if isinstance(blob, str) and blob:
        pieces.append(blob)
    return "\n".join(pieces)


def item_specs(item: dict[str, Any]) -> list[Spec] | None:
    """The parts a `response_item` payload yields (None: an item type this importer does not know)."""
    kind = item.get("type")
    item_id = _str(item.get("id")) or _str(item.get("call_id"))
    if kind == "message":
        role = item.get("role")
        content = item.get("content")
        if role == "assistant":
            wire, part_kind, output = "assistant", "assistant_text", True
        elif role in ("developer", "system"):
            wire, part_kind, output = "system", "system", False
        else:
            wire, part_kind, output = "user", "user_text", False
        specs = []
        for piece in content if isinstance(content, list) else [content]:
            if isinstance(piece, dict) and piece.get("type") == "input_image":
                specs.append(Spec(wire, "file", "", None, item_id, output))
            else:
                specs.extend(Spec(wire, part_kind, t, None, item_id, output) for t in _texts([piece]))
        return specs
    if kind == "reasoning":
        text = reasoning_text(item)
        return [Spec("assistant", "reasoning", text, None, item_id, True)]
    if kind == "function_call":
        name = _str(item.get("name"))
        return [Spec("assistant", "tool_call", _json_text(item.get("arguments")), name, item_id, True)]
    if kind == "custom_tool_call":
        name = _str(item.get("name"))
        return [Spec("assistant", "tool_call", _json_text(item.get("input")), name, item_id, True)]
    if kind in ("web_search_call", "local_shell_call"):
        name = "web_search" if kind == "web_search_call" else "local_shell"
        return [Spec("assistant", "tool_call", _json_text(item.get("action")), name, item_id, True)]
    if kind == "tool_search_call":
        return [
            Spec("assistant", "tool_call", _json_text(item.get("arguments")), "tool_search", item_id, True)
        ]
    if kind in ("function_call_output", "custom_tool_call_output"):
        return [Spec("user", "tool_result", output_text(item.get("output")), None, item_id, False)]
    if kind == "tool_search_output":
        return [Spec("user", "tool_result", _json_text(item.get("tools")), "tool_search", item_id, False)]
    if kind == "compaction":
        return [Spec("user", "summary", _json_text(item.get("encrypted_content")), None, item_id, False)]
    return None


class InvalidUsage(ValueError):
    """A `*_token_usage` field holds a value that is not a count."""


def usage_of(value: Any) -> dict[str, int] | None:
    """A `*_token_usage` object's counts, a field not recorded being 0 (None when it is not an object).

    Raises `InvalidUsage` when a field is not a count (`calib.core.usage.token_counts`).
    """
    if not isinstance(value, dict):
        return None
    counts = token_counts(*map(value.get, USAGE_FIELDS))
    if counts is None:
        raise InvalidUsage("a token count is not a count")
    return {key: count or 0 for key, count in zip(USAGE_FIELDS, counts, strict=True)}
