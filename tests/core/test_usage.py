"""The ctx and carry rules of calib.core.usage, one style at a time (reference/formats.md section 5)."""

from __future__ import annotations

import pytest

from calib.core.usage import MAX_COUNT, carried_tokens, context_tokens, is_missing, token_counts


def test_anthropic_context_adds_cache_reads_and_writes_to_uncached_input() -> None:
    assert context_tokens("anthropic", 10, 5000, 40) == 5050
    assert context_tokens("anthropic", 10) == 10
    assert context_tokens("anthropic", 0, cache_read=300) == 300
    assert context_tokens("anthropic", 10, None, 7) == 17


@pytest.mark.parametrize("style", ["gemini", "openai"])
def test_gemini_and_openai_prompt_counts_already_include_the_cache(style: str) -> None:
    assert context_tokens(style, 5050, 5000, 40) == 5050  # type: ignore[arg-type]
    assert context_tokens(style, 12) == 12  # type: ignore[arg-type]


@pytest.mark.parametrize("style", ["anthropic", "gemini", "openai"])
def test_no_input_means_no_context(style: str) -> None:
    assert context_tokens(style, None, 100, 100) is None  # type: ignore[arg-type]
    assert carried_tokens(style, None, 50) is None  # type: ignore[arg-type]


def test_gemini_carries_output_as_thoughts_are_not_resent() -> None:
    assert carried_tokens("gemini", 120, 900) == 120
    assert carried_tokens("gemini", 120, 900, reasoning_resent=True) == 120


def test_openai_carries_output_minus_reasoning_never_below_zero() -> None:
    assert carried_tokens("openai", 500, 200) == 300
    assert carried_tokens("openai", 500) == 500
    assert carried_tokens("openai", 100, 250) == 0
    # Codex passes its reasoning items back within a turn: the whole output is carried
    assert carried_tokens("openai", 500, 200, reasoning_resent=True) == 500


def test_anthropic_carries_output_plus_reasoning_only_when_resent() -> None:
    assert carried_tokens("anthropic", 80, 40) == 80
    assert carried_tokens("anthropic", 80, 40, reasoning_resent=True) == 120
    assert carried_tokens("anthropic", 80, None, reasoning_resent=True) == 80


def test_is_missing_means_absent_or_all_zero() -> None:
    assert is_missing()
    assert is_missing(None, None)
    assert is_missing(0, None, 0)
    assert not is_missing(0, 0, 1)
    assert not is_missing(None, 7)


def test_token_counts_takes_integers_and_whole_floats_and_keeps_none() -> None:
    assert token_counts(0, 12, None, 7.0, MAX_COUNT) == (0, 12, None, 7, MAX_COUNT)
    assert token_counts() == ()


@pytest.mark.parametrize(
    "bad",
    [
        True,
        False,
        1.5,
        "12",
        -1,
        -0.5,
        MAX_COUNT + 1,
        2**63,
        2**64,
        float("inf"),
        float("nan"),
        [1],
        {"n": 1},
    ],
)
def test_a_value_that_is_not_a_count_makes_the_whole_usage_invalid(bad: object) -> None:
    assert token_counts(10, bad, 3) is None


def test_any_sum_of_counts_fits_in_64_bits() -> None:
    assert context_tokens("anthropic", MAX_COUNT, MAX_COUNT, MAX_COUNT) < 2**63  # type: ignore[operator]
