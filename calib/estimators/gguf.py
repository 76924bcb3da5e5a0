"""A reader of the header of a GGUF file (llama.cpp's model format): its metadata, never its tensors.

GGUF v2 and v3 (little-endian): the magic `b"GGUF"`, a uint32 version, a uint64 tensor count, a
uint64 count of key-value pairs, then the pairs: a key (uint64 length + UTF-8 bytes), a uint32
value type and the value. Types 0-12 are uint8, int8, uint16, int16, uint32, int32, float32,
bool, string, array, uint64, int64, float64; an array is its item type (uint32), a uint64 length,
then the items. The tensor infos and the tensor data follow the pairs; the reader stops before them,
so a header is read from the first megabytes of a file (or of the first chunk of a split one).

Standard library only: calib needs a GGUF file for the tokenizer metadata it carries (the
`tokenizer.ggml.*` keys), not for weights, so neither the `gguf` package nor transformers' reader
(which needs torch) is used.
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from calib.core.errors import EstimatorError

MAGIC = b"GGUF"
VERSIONS = (2, 3)

# Value types: struct format of the fixed-size ones (little-endian), by type number.
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
_FIXED: dict[int, str] = {
    UINT8: "B",
    INT8: "b",
    UINT16: "H",
    INT16: "h",
    UINT32: "I",
    INT32: "i",
    FLOAT32: "f",
    BOOL: "?",
    UINT64: "Q",
    INT64: "q",
    FLOAT64: "d",
}
_SIZE = {kind: struct.calcsize("<" + fmt) for kind, fmt in _FIXED.items()}

_CHUNK = 1 << 20  # bytes read from the file at a time
_MAX_KEY = 1 << 16  # longer keys are damage, not metadata
_MAX_DEPTH = 4  # arrays of arrays nest no deeper in real files


@dataclass(slots=True)
class GgufHeader:
    """What a GGUF file says before its tensors: the format version, tensor count and metadata."""

    version: int
    tensor_count: int
    metadata: dict[str, Any] = field(default_factory=dict)
    end: int = 0  # the offset where the key-value section ends (the tensor infos begin)


class _Stream:
    """Reads a file front to back, a chunk at a time, and says where it stopped short."""

    def __init__(self, fh: IO[bytes], size: int, path: str) -> None:
        self._fh = fh
        self._buf = b""
        self._pos = 0  # in _buf
        self._base = 0  # file offset of _buf[0]
        self.size = size
        self.path = path

    @property
    def offset(self) -> int:
        return self._base + self._pos

    def remaining(self) -> int:
        return self.size - self.offset

    def take(self, n: int) -> bytes:
        end = self._pos + n
        if end > len(self._buf):
            rest = self._buf[self._pos :]
            more = self._fh.read(max(n - len(rest), _CHUNK))
            self._base += self._pos
            self._buf, self._pos, end = rest + more, 0, n
            if end > len(self._buf):
                raise _truncated(self.path, self.offset)
        data = self._buf[self._pos : end]
        self._pos = end
        return data

    def unpack(self, fmt: str) -> Any:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))[0]


def _truncated(path: str, offset: int) -> EstimatorError:
    return EstimatorError(
        f"the GGUF header ends early (file truncated at byte {offset})",
        path=path,
        hint="the file is incomplete or damaged: reinstall the package that ships it",
    )


def _damaged(path: str, offset: int, what: str) -> EstimatorError:
    return EstimatorError(
        f"not a readable GGUF header: {what} at byte {offset}",
        path=path,
        hint="the file is damaged or not GGUF: reinstall the package that ships it",
    )


def _string(stream: _Stream, limit: int | None = None) -> str:
    start = stream.offset
    length = stream.unpack("Q")
    if length > stream.remaining():
        raise _truncated(stream.path, stream.size)
    if limit is not None and length > limit:
        raise _damaged(stream.path, start, f"a key of {length} bytes")
    raw = stream.take(length)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        # llama.cpp writes tokens as raw bytes; a token that is not UTF-8 keeps its bytes readable
        return raw.decode("utf-8", "surrogateescape")


def _value(stream: _Stream, kind: int, depth: int = 0) -> Any:
    fmt = _FIXED.get(kind)
    if fmt is not None:
        return stream.unpack(fmt)
    if kind == STRING:
        return _string(stream)
    if kind == ARRAY:
        start = stream.offset
        item = stream.unpack("I")
        count = stream.unpack("Q")
        return _array(stream, item, count, depth + 1, start)
    raise _damaged(stream.path, stream.offset - 4, f"unknown value type {kind}")


def _array(stream: _Stream, item: int, count: int, depth: int, start: int) -> list[Any]:
    if depth > _MAX_DEPTH:
        raise _damaged(stream.path, start, f"arrays nested {depth} deep")
    fmt = _FIXED.get(item)
    if fmt is not None:
        size = _SIZE[item]
        if count * size > stream.remaining():
            raise _truncated(stream.path, stream.size)
        values = array(fmt if fmt != "?" else "B")
        values.frombytes(stream.take(count * size))
        if sys.byteorder != "little":
            values.byteswap()
        return [bool(v) for v in values] if item == BOOL else values.tolist()
    if item == STRING:
        if count * 8 > stream.remaining():  # every string has at least its 8-byte length
            raise _truncated(stream.path, stream.size)
        return [_string(stream) for _ in range(count)]
    if item == ARRAY:
        if count * 12 > stream.remaining():
            raise _truncated(stream.path, stream.size)
        return [_value(stream, ARRAY, depth) for _ in range(count)]
    raise _damaged(stream.path, start, f"an array of unknown value type {item}")


def read_header_from(fh: IO[bytes], size: int, path: str) -> GgufHeader:
    """The header of a GGUF stream of `size` bytes (`path` names it in errors)."""
    stream = _Stream(fh, size, path)
    if size < 4 or stream.take(4) != MAGIC:
        raise EstimatorError(
            "not a GGUF file (it does not start with b'GGUF')",
            path=path,
            hint="give a .gguf model file, or the first chunk of a split one",
        )
    version = stream.unpack("I")
    if version not in VERSIONS:
        swapped = struct.unpack(">I", struct.pack("<I", version))[0]
        what = "a big-endian GGUF file" if swapped in VERSIONS else f"GGUF version {version}"
        raise EstimatorError(
            f"{what}, which calib does not read (it reads little-endian GGUF v2 and v3)",
            path=path,
            hint="convert the model with a current llama.cpp, or use another tokenizer source",
        )
    tensor_count = stream.unpack("Q")
    kv_count = stream.unpack("Q")
    if kv_count * 13 > stream.remaining():  # a pair is at least a key length, a type and a byte
        raise _truncated(path, size) if kv_count < 1 << 32 else _damaged(path, 16, f"{kv_count} pairs")
    metadata: dict[str, Any] = {}
    for _ in range(kv_count):
        key = _string(stream, _MAX_KEY)
        kind = stream.unpack("I")
        metadata[key] = _value(stream, kind)
    return GgufHeader(version, tensor_count, metadata, stream.offset)


def read_header(path: Path) -> GgufHeader:
    """The header of the GGUF file at `path`, read up to the end of its key-value section."""
    try:
        with path.open("rb") as fh:
            return read_header_from(fh, os.fstat(fh.fileno()).st_size, str(path))
    except OSError as exc:
        raise EstimatorError(
            f"cannot read the GGUF file: {exc.strerror or exc}",
            path=str(path),
            hint="check that the file exists and is readable",
        ) from exc
