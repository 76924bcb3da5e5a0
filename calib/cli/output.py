"""What commands print on stdout, rendered one way: standard library only, so the quick path shares it."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from calib.core.paths import readable_path
from calib.core.printable import printable_json

if TYPE_CHECKING:
    from calib.ingest.result import IngestResult


def emit_json(document: Any) -> None:
    """Print one JSON document on stdout (sorted keys, so output is stable; the control characters JSON
    leaves raw, such as C1, written as `\\u` escapes: the document may hold log text)."""
    text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    sys.stdout.write(printable_json(text) + "\n")


def emit_json_list(document: dict[str, Any], key: str, items: Iterable[Any]) -> None:
    """`emit_json` of `document` with `items` under `key`, written one item at a time as they come (the
    same text, without holding every item): for a list too long to hold whole."""
    head = json.dumps({**document, key: []}, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    opening = f'  "{key}": []'
    before, after = head.split(opening, 1) if opening in head else (None, None)
    if before is None or after is None:
        emit_json({**document, key: list(items)})
        return
    out = sys.stdout
    first = True
    for item in items:
        text = json.dumps(item, indent=2, sort_keys=True, ensure_ascii=False, default=str)
        piece = "\n".join("    " + line for line in text.split("\n"))  # not splitlines: U+0085 is in strings
        out.write(printable_json((before + f'  "{key}": [\n' if first else ",\n") + piece))
        first = False
    out.write(printable_json(before + opening if first else "\n  ]") + printable_json(after) + "\n")


def warning_lines(result: IngestResult) -> list[str]:
    """The `Warning:` lines of an ingest: each file's kept warnings, then once how many more it had."""
    by_path: dict[str, list[str]] = {}
    for warning in result.warnings:
        path = readable_path(warning.path) if warning.path is not None else ""
        by_path.setdefault(path, []).append(f"Warning: {warning}")
    for path in result.warnings_left_out:  # a folder read as a whole: its warnings name its files
        by_path.setdefault(path, [])
    lines: list[str] = []
    for path, kept in by_path.items():
        lines += kept
        more = result.warnings_left_out.get(path)
        if more:
            lines.append(f"Warning: … and {more} more damaged lines in {path}")
    return lines


def emit_ingest(result: IngestResult, as_json: bool) -> None:
    """Print what `calib ingest` did: its summary line, or its JSON document."""
    if as_json:
        emit_json(result.to_dict())
    else:
        sys.stdout.write(result.summary() + "\n")
