"""File system paths as calib meets them: names that are bytes, and files that are not regular files.

On Linux a name is bytes, not text: Python decodes the bytes that are not UTF-8 into lone surrogates
(`surrogateescape`), which open the file fine but which UTF-8 (the store's text, JSON, a terminal)
cannot hold. `readable_path` shows such a name with those bytes as `\\xNN`, the one form calib stores
and prints. A FIFO, a socket or a device named like a session file must never be opened: opening a
FIFO waits for a writer forever, and reading /dev/zero never ends. `open_regular` checks first.

Standard library only: the quick path of `calib ingest` may import it, and `calib.core.errors` does.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

# O_NONBLOCK: should a FIFO appear between the check and the open, the open returns at once (a
# regular file ignores the flag).
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


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


def file_kind(mode: int) -> str:
    """What a file of this `st_mode` is, as a message names it ("a FIFO", "a regular file", ...)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "a special file"


class NotARegularFileError(OSError):
    """A path that was to be read is a FIFO, a socket or a device (`kind`), not a regular file."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(None, f"{kind}, not a regular file", os.fspath(path))
        self.kind = kind


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a regular file to read bytes; `NotARegularFileError` (an OSError) for anything else.

    The file is checked before it is opened (a FIFO's open would block) and again after (it may have
    been replaced in between).
    """
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotARegularFileError(path, file_kind(mode))
    fd = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotARegularFileError(path, file_kind(mode))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a regular file (see `open_regular`)."""
    with open_regular(path) as fh:
        return fh.read()
