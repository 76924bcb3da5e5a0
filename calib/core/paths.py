"""File system paths as calib meets them: names that are bytes.

On Linux a name is bytes, not text: Python decodes the bytes that are not UTF-8 into lone surrogates
(`surrogateescape`), which open the file fine but which UTF-8 (the store's text, JSON, a terminal)
cannot hold. `readable_path` shows such a name with those bytes as `\\xNN`, the one form calib stores
and prints.

Standard library only: the quick path of `calib ingest` may import it.
"""

from __future__ import annotations

import os


def readable_path(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> str:
    """The path as text UTF-8 can hold: the bytes of a name that are not UTF-8 shown as `\\xNN`."""
    text = os.fsdecode(path)
    if text.isascii():
        return text
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file name decodes to (text made elsewhere)
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")
