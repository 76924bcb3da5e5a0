"""The heuristics give exactly the integers the agents' JavaScript computes.

Expected values are worked out by hand from the agents' source (UTF-16 `length`, `Math.round`
rounding .5 up, a double accumulated left to right, `Math.floor`), not by calling calib.
"""

from __future__ import annotations

import math
import random

import pytest

from calib.core.errors import EstimatorError
from calib.estimators import get_estimator
from calib.estimators.heuristics import CjkEstimator, utf16_length


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 0),  # 0.25 -> 0
        ("ab", 1),  # 0.5 -> Math.round gives 1 (Python's round gives 0)
        ("abc", 1),  # 0.75 -> 1
        ("abcdef", 2),  # 1.5 -> 2
        ("abcdefghij", 3),  # 2.5 -> 3 (banker's rounding would give 2)
        ("x" * 18, 5),  # 4.5 -> 5
        ("中文", 1),  # 2 units -> 0.5 -> 1
        ("😀", 1),  # one astral character is 2 UTF-16 units: 0.5 -> 1 (0 if counted as 1 char)
        ("😀😀😀", 2),  # 6 units -> 1.5 -> 2 (3 code points would give 1)
        ("\ud800", 0),  # a lone surrogate is one unit: 0.25 -> 0
        ("a😀b", 1),  # 4 units -> 1
    ],
)
def test_chars4_is_javascript_math_round_of_length_over_4(text: str, expected: int) -> None:
    est = get_estimator("chars4")
    assert est.count(text) == expected
    assert est.count_many([text]) == [expected]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("abc", 0),  # 0.75 -> floor 0
        ("abcd", 1),
        ("中文", 3),  # 1.5 + 1.5
        ("ab中", 2),  # 0.25 + 0.25 + 1.5
        ("é", 1),  # 1.5 -> 1
        ("😀", 3),  # charCodeAt walk: two surrogate units, 1.5 each (for...of would give 1)
        ("\ud800", 1),  # a lone surrogate: one unit > 127
        ("中" * 100_000, 150_000),  # exactly the limit: still the full walk
        ("中" * 100_001, 25_000),  # over 100k units: length / 4 = 25000.25 -> 25000
        ("😀" * 50_001, 25_000),  # 100,002 units -> fast path, 25000.5 -> 25000
        ("a" * 100_003, 25_000),
    ],
)
def test_cjk_matches_gemini_cli_043(text: str, expected: int) -> None:
    est = get_estimator("cjk")
    assert est.count(text) == expected
    assert est.count_many([text, text]) == [expected, expected]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("中" * 3, 3),  # 1.3 + 1.3 + 1.3 = 3.9000000000000004 -> 3
        ("中" * 20, 26),  # 26.000000000000007 -> 26
        ("中" * 30, 38),  # thirty additions of 1.3 give 38.99999999999999 in doubles -> 38, not 39
        ("中" * 100, 129),  # 129.99999999999983 -> 129, not 130
        ("a中", 1),  # 0.25 + 1.3 = 1.55
        ("😀", 2),  # 2.6
        ("中" * 5 + "a" * 4, 7),  # 6.5 + 1.0 = 7.5 -> 7
        ("中" * 100_001, 25_000),  # the >100k rule exists in this version too
    ],
)
def test_cjk_13_reproduces_the_float_walk_of_gemini_cli_041(text: str, expected: int) -> None:
    assert get_estimator("cjk:1.3").count(text) == expected


def _js_walk(text: str, non_ascii: float) -> int:
    """gemini-cli's estimateTextTokens + Math.floor, transcribed literally (one unit at a time)."""
    raw = text.encode("utf-16-le", "surrogatepass")
    units = [raw[i] | raw[i + 1] << 8 for i in range(0, len(raw), 2)]
    if len(units) > 100_000:
        return math.floor(len(units) / 4)
    total = 0.0
    for unit in units:
        total += 0.25 if unit <= 127 else non_ascii
    return math.floor(total)


@pytest.mark.parametrize("weight", [1.3, 1.5, 0.33, 2.7])
def test_cjk_family_equals_a_literal_transcription_on_random_text(weight: float) -> None:
    rng = random.Random(11)
    alphabet = ["a", " ", "{", "\n", "中", "文", "😀", "é", "\ud800", "x" * 50, "y" * 301]
    est = CjkEstimator(weight)
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(400)]
    assert [est.count(t) for t in texts] == [_js_walk(t, weight) for t in texts]
    assert est.count_many(texts) == [_js_walk(t, weight) for t in texts]


def test_cjk_family_names_and_bad_weights() -> None:
    assert get_estimator("cjk:2.5").count("中中") == 5
    assert get_estimator("cjk:2.5").name == "cjk:2.5"
    with pytest.raises(EstimatorError, match="not a number"):
        get_estimator("cjk:lots")
    with pytest.raises(EstimatorError, match=">= 0"):
        get_estimator("cjk:-1")


def test_utf16_length_counts_code_units() -> None:
    assert utf16_length("") == 0
    assert utf16_length("abc") == 3
    assert utf16_length("中😀") == 3
    assert utf16_length("\ud800x") == 2
