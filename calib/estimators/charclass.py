"""`charclass`: tokens as a weighted sum of character-class counts, plus an optional intercept.

Classes partition a text's code points (so they add up to `len(text)`):

- `letters`: ASCII A-Z, a-z
- `digits`: ASCII 0-9
- `whitespace`: ASCII space, tab, newline, CR, VT, FF
- `punctuation`: every other ASCII code point (punctuation, symbols, control characters)
- `cjk`: U+3000 to U+DFFF: CJK punctuation, kana, bopomofo, ideographs (with extension A) and
  Hangul syllables (the range also holds Yi and a few rare scripts, which tokenize alike)
- `other`: every other code point (accented Latin, Cyrillic, fullwidth forms, emoji, ...)

Counting is one `bytes.translate` over the UTF-8 text that maps each class to one marker byte
and drops continuation bytes, then `bytes.count` per marker (three on an ASCII text, which has no
CJK nor other code point): 270 MB/s on the bench corpus (`calib bench`, 2026-11-28; 130 MB/s with
five counts on every text), against 45 MB/s for polars `str.count_matches` with one regex per class
(polars only draws level on strings of ~60 characters); numpy over the Arrow buffer of a batch of
texts (a class per byte, then `bincount` by text) took 1.03 s on the 96 MB of the scale benchmark's
distinct texts, against 0.61 s for this path before its ASCII shortcut. So the Python path is used.

The estimate is `round_half_up(intercept + sum(weight[c] * count[c]))`, clamped at 0; the empty
text is 0 whatever the intercept (an empty part adds nothing to a prompt). The built-in
`charclass` uses `DEFAULT_WEIGHTS`, a least-squares fit to o200k_base counts (see
`fit_weights`) on pieces of the `calib bench` corpus; `charclass:PATH` reads weights from JSON:
`{"weights": {"letters": 0.2, ...}, "intercept": 0.0}` or the same keys flat.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from calib.core.errors import EstimatorError
from calib.core.home import expand_home
from calib.core.jsonfile import read_json_file
from calib.estimators import get_estimator

if TYPE_CHECKING:
    import polars as pl

CLASSES = ("letters", "digits", "whitespace", "punctuation", "cjk", "other")
# Scoring stores each class's per-part count as the count source `class:<name>`.
CLASS_PREFIX = "class:"


def class_sources() -> list[str]:
    """The count sources of the character classes the charclass calibration weighs."""
    return [CLASS_PREFIX + name for name in CLASSES]


# Least-squares fit of o200k_base token counts on class counts (with intercept) over 3,000
# pieces of 20 to 3,000 characters cut (random.Random(7)) from the full `calib bench` corpus on
# CPython 3.11.7: `fit_weights(*fit_sample(build_corpus()))`. Re-derive after changing classes.
DEFAULT_WEIGHTS: dict[str, float] = {
    "letters": 0.2295,
    "digits": 0.9701,
    "whitespace": 0.1575,
    "punctuation": 0.3499,
    "cjk": 0.7086,
    "other": 0.4993,
}
DEFAULT_INTERCEPT = 1.978
# On that corpus (sha256 d8a7992d…) the sums land within 2% of o200k_base per content type
# (EN 1.014, code 0.981, JSON 1.002, CJK 1.002 of the real count).

_MARK = {"letters": 97, "digits": 48, "whitespace": 32, "punctuation": 46, "cjk": 67}  # a 0 space . C


def _table() -> bytes:
    table = bytearray(b"." * 256)  # other ASCII -> punctuation
    for b in range(256):
        if 65 <= b <= 90 or 97 <= b <= 122:
            table[b] = _MARK["letters"]
        elif 48 <= b <= 57:
            table[b] = _MARK["digits"]
        elif b in b" \t\n\r\x0b\x0c":
            table[b] = _MARK["whitespace"]
        elif b >= 0xC0:
            table[b] = ord("O")  # lead byte of some other non-ASCII code point
    for b in range(0xE3, 0xEE):  # lead bytes of U+3000..U+DFFF
        table[b] = _MARK["cjk"]
    return bytes(table)


_TABLE = _table()
_CONTINUATION = bytes(range(0x80, 0xC0))


def _counts(text: str) -> tuple[int, int, int, int, int, int]:
    if text.isascii():  # no CJK nor other code point: three counts give the four ASCII classes
        marks = text.encode("ascii").translate(_TABLE)
        digits = marks.count(48)
        space = marks.count(32)
        punct = marks.count(46)
        return len(marks) - digits - space - punct, digits, space, punct, 0, 0
    # surrogatepass: a lone surrogate becomes a 3-byte sequence (lead 0xED) instead of an error
    marks = text.encode("utf-8", "surrogatepass").translate(_TABLE, _CONTINUATION)
    letters = marks.count(97)
    digits = marks.count(48)
    space = marks.count(32)
    punct = marks.count(46)
    cjk = marks.count(67)
    return letters, digits, space, punct, cjk, len(marks) - letters - digits - space - punct - cjk


def class_counts(texts: Sequence[str]) -> pl.DataFrame:
    """Per-text counts of each character class: one row per text, one Int64 column per class."""
    import polars as pl

    rows = [_counts(t) for t in texts]
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in CLASSES]
    return pl.DataFrame(
        {name: pl.Series(name, col, dtype=pl.Int64) for name, col in zip(CLASSES, columns, strict=True)}
    )


class CharClassEstimator:
    """Tokens as `intercept + sum(weights[class] * count[class])`, rounded half up, at least 0."""

    version = "1"  # the count cache's key: `charclass:PATH` adds a hash of its file
    files: tuple[str, ...] = ()  # the weights file `charclass:PATH` read

    def __init__(self, weights: dict[str, float], intercept: float = 0.0, name: str = "charclass") -> None:
        unknown = sorted(set(weights) - set(CLASSES))
        if unknown:
            raise EstimatorError(
                f"unknown character class {unknown[0]!r} in charclass weights",
                hint=f"classes are {', '.join(CLASSES)}",
            )
        values = [float(weights.get(c, 0.0)) for c in CLASSES]
        if not all(math.isfinite(v) for v in [*values, float(intercept)]):
            raise EstimatorError("charclass weights must be finite numbers")
        self.weights = dict(zip(CLASSES, values, strict=True))
        self.intercept = float(intercept)
        self.name = name
        self._w = tuple(values)

    def count(self, text: str) -> int:
        """The rounded weighted class count of `text` (0 for the empty text)."""
        if not text:
            return 0
        c = _counts(text)
        w = self._w
        value = (
            self.intercept + w[0] * c[0] + w[1] * c[1] + w[2] * c[2] + w[3] * c[3] + w[4] * c[4] + w[5] * c[5]
        )
        return max(0, math.floor(value + 0.5))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """`count` of each text."""
        count = self.count
        return [count(t) for t in texts]


def fit_weights(
    texts: Sequence[str], targets: Sequence[int], intercept: bool = True
) -> tuple[dict[str, float], float]:
    """Least-squares class weights (and intercept) that best predict `targets` from `texts`."""
    rows = [[*_counts(t), 1.0] if intercept else list(_counts(t)) for t in texts]
    k = len(rows[0]) if rows else 0
    # normal equations X'X b = X'y, solved by Gaussian elimination: 7 unknowns need no numpy
    xtx = [[sum(r[i] * r[j] for r in rows) for j in range(k)] for i in range(k)]
    xty = [sum(r[i] * y for r, y in zip(rows, targets, strict=True)) for i in range(k)]
    solution = _solve(xtx, xty)
    weights = dict(zip(CLASSES, solution[: len(CLASSES)], strict=True))
    return weights, (solution[-1] if intercept else 0.0)


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    n = len(b)
    m = [[float(v) for v in row] + [float(rhs)] for row, rhs in zip(a, b, strict=True)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-9:
            continue  # a class absent from the sample keeps weight 0
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(n):
            if r != col:
                f = m[r][col] / m[col][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[col], strict=True)]
    return [m[i][n] / m[i][i] if abs(m[i][i]) >= 1e-9 else 0.0 for i in range(n)]


def fit_sample(corpus: Any, pieces: int = 3000, seed: int = 7) -> tuple[list[str], list[int]]:
    """Pieces of varied length cut from a bench corpus, with their o200k_base counts."""
    rng = random.Random(seed)
    docs = corpus.all()
    texts = []
    for _ in range(pieces):
        doc = rng.choice(docs)
        size = rng.randint(20, 3000)
        start = rng.randint(0, max(0, len(doc) - size))
        texts.append(doc[start : start + size])
    return texts, get_estimator("tiktoken:o200k_base").count_many(texts)


def default() -> CharClassEstimator:
    """Registry constructor for `charclass` (weights fitted to o200k_base)."""
    return CharClassEstimator(DEFAULT_WEIGHTS, DEFAULT_INTERCEPT, name="charclass")


def from_file(arg: str) -> CharClassEstimator:
    """Registry constructor for `charclass:PATH`: weights from a JSON file."""
    path = expand_home(arg)
    raw, data = read_json_file(
        path,
        "the charclass weights file",
        hint="give a JSON file of class weights",
        fix='write {"weights": {"letters": 0.2, ...}, "intercept": 0}',
        error=EstimatorError,
        missing="charclass weights file not found",
    )
    if not isinstance(data, dict):
        raise EstimatorError("charclass weights must be a JSON object", path=str(path))
    weights = data.get("weights", {k: v for k, v in data.items() if k != "intercept"})
    intercept = data.get("intercept", 0.0)
    if not isinstance(weights, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in [*weights.values(), intercept]
    ):
        raise EstimatorError(
            "charclass weights must map class names to numbers",
            path=str(path),
            hint=f'e.g. {{"weights": {{"letters": 0.2, "cjk": 0.7}}, "intercept": 0}}; classes: {", ".join(CLASSES)}',
        )
    try:
        estimator = CharClassEstimator(weights, intercept, name=f"charclass:{arg}")
    except EstimatorError as exc:
        raise EstimatorError(exc.what, path=str(path), hint=exc.hint) from None
    # The file's contents are part of the estimator's identity (the count cache is keyed by it).
    estimator.version = f"1+{hashlib.sha256(raw).hexdigest()[:16]}"
    estimator.files = (str(path),)
    return estimator
