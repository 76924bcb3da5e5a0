"""`ctok:VERSION`: Claude's tokenizers as the `ctok` package reconstructs them, offline (`calib[claude]`).

`ctok` (PyPI, MIT, unofficial) rebuilds the counts of Claude's tokenizer families from measurements
of Anthropic's `count_tokens`: `ctok:3.0` is the family of Claude 3 up to Opus 4.6, Sonnet 4.6 and
Haiku 4.5, `ctok:4.7` the new tokenizer of Opus 4.7 (on which every other counter needs a slope of
1.4-1.6), `ctok:4.8` the frame of later models over the same vocabulary. A version routes the way
`ctok` routes it (`3.x` to `4.6` are the first family).

`ctok` counts a text as one user message, frame included; calib counts content, like every other
estimator: the tokens of the text without the message frame's padding (0 for the empty text). The
framing is the calibration's per-message overhead.

It is pure Python, about 0.2-0.4 MB/s on one core (`calib bench`), two orders of magnitude slower than
o200k_base, so `calib fit` compares it only when asked (`--candidate ctok:3.0`, or `--base ctok:3.0`):
among the default candidates it would count every text of the compared sessions, not only Claude's.
`ctok` requires Python 3.12 or later; on 3.11 the extra installs nothing and this estimator says so.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from collections.abc import Sequence

from calib.core.errors import EstimatorError

DISTRIBUTION = "ctok"
HINT = "pip install 'calib[claude]'"
MIN_PYTHON = (3, 12)


def missing() -> str | None:
    """Why no `ctok:` estimator can load here (None when one can); cheap, nothing imported."""
    if sys.version_info < MIN_PYTHON:
        running = ".".join(map(str, sys.version_info[:2]))
        return f"needs Python 3.12+ for ctok (this is {running}), then {HINT}"
    if importlib.util.find_spec(DISTRIBUTION) is None:
        return f"needs ctok: {HINT}"
    return None


def _check(version: str) -> None:
    """Refuse a version no Claude tokenizer family has (ctok's own families start at 3.0)."""
    parts = version.split(".")
    if not all(p.isdigit() for p in parts) or tuple(int(p) for p in parts) < (3,):
        raise EstimatorError(f"ctok has no Claude tokenizer {version!r}", hint="e.g. ctok:3.0 or ctok:4.7")


def cache_version(version: str) -> str:
    """The count-cache version of `ctok:VERSION`: the package's version and the family asked for."""
    _check(version)
    try:
        installed = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        installed = "missing"
    return f"ctok-{installed}-{version}"


class CtokEstimator:
    """Content tokens of Claude's tokenizer family `version`, as `ctok` counts them."""

    def __init__(self, version: str) -> None:
        _check(version)
        reason = missing()
        if reason is not None:
            raise EstimatorError(f"ctok:{version} cannot load here", hint=reason)
        import ctok

        try:
            empty = ctok.tokenize("", version)
        except (NotImplementedError, TypeError) as exc:
            raise EstimatorError(
                f"ctok has no Claude tokenizer {version!r}: {exc}", hint="e.g. ctok:3.0 or ctok:4.7"
            ) from None
        # the frame's padding before the content (tokens spelled like the first one of an empty
        # message); what follows it is the text's own tokens
        pad = empty[0] if empty else None
        self._frame = next((i for i, token in enumerate(empty) if token != pad), len(empty))
        self._tokenize = ctok.tokenize
        self._family = version
        self.name = f"ctok:{version}"
        self.version = cache_version(version)

    def count(self, text: str) -> int:
        """Tokens of `text` without the message frame (0 for the empty string)."""
        if not text:
            return 0
        return max(0, len(self._tokenize(text, self._family)) - self._frame)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """`count` of each text."""
        return [self.count(t) for t in texts]


def ctok_family(version: str) -> CtokEstimator:
    """The registry's constructor of `ctok:VERSION`."""
    return CtokEstimator(version)
