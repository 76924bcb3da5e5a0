"""What commands print on stdout, rendered one way: standard library only, so the quick path shares it."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from calib.core.printable import printable_json

if TYPE_CHECKING:
    from calib.ingest.result import IngestResult


def emit_json(document: Any) -> None:
    """Print one JSON document on stdout (sorted keys, so output is stable; the control characters JSON
    leaves raw, such as C1, written as `\\u` escapes: the document may hold log text)."""
    text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    sys.stdout.write(printable_json(text) + "\n")


def emit_ingest(result: IngestResult, as_json: bool) -> None:
    """Print what `calib ingest` did: its summary line, or its JSON document."""
    if as_json:
        emit_json(result.to_dict())
    else:
        sys.stdout.write(result.summary() + "\n")
