"""Text from logs and paths made safe to print: control characters shown escaped, never sent raw.

A model name, a session title or a file name comes from files calib does not control. Sent raw to a
terminal, an escape sequence in it can retitle the window, clear the screen or recolour what follows,
and a newline in a path can print a second `Error:` line that calib never wrote. `printable` shows each
such character as a Python escape (`\\x1b`, `\\n`, `\\u202e`), so that the text stays readable and one
line stays one line: every C0 control (newline and tab included), DEL, every C1 control, the line and
paragraph separators Python splits lines on, and the bidirectional controls that reorder what is shown.
Everything else, backslashes included, is left as it is.

Every message the CLI prints and every table cell or report.md cell built from such text goes through
it (`calib.cli.common`, `calib.analysis.markdown`).
"""

from __future__ import annotations

import re

__all__ = ["printable", "printable_json"]

# Beyond C0: DEL, C1, the separators Python splits lines on, the bidirectional controls.
_BEYOND_C0 = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x1f{_BEYOND_C0}]")
# json.dumps escapes C0 in strings itself (its newlines and spaces outside them are layout)
_RAW_IN_JSON = re.compile(f"[{_BEYOND_C0}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: object) -> str:
    """`text` (made a string) with every control character shown as its escape (`\\x1b`, `\\n`)."""
    shown = text if isinstance(text, str) else str(text)
    return _UNSAFE.sub(_escape, shown) if _UNSAFE.search(shown) else shown


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def printable_json(text: str) -> str:
    """JSON `text` (as `json.dumps(..., ensure_ascii=False)` writes it) with the characters `printable`
    escapes that JSON leaves raw (DEL, C1, the separators and bidirectional controls) written as
    `\\uXXXX`: the same document, safe to print (outside strings JSON has none of them)."""
    return _RAW_IN_JSON.sub(_json_escape, text) if _RAW_IN_JSON.search(text) else text
