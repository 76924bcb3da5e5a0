"""ctok:VERSION: Claude's tokenizers from the ctok package, content counted without the message frame."""

from __future__ import annotations

import sys

import pytest

from calib.core.errors import EstimatorError
from calib.estimators import cache_version, ctok, get_estimator, list_estimators, why_unusable

HAS_CTOK = ctok.missing() is None
needs_ctok = pytest.mark.skipif(
    not HAS_CTOK, reason="ctok is not installed here (calib[claude], Python 3.12+)"
)


def test_a_version_no_claude_family_has_is_refused_before_anything_loads() -> None:
    for bad in ("2", "abc", "3.x"):
        for refuse in (cache_version, get_estimator):
            with pytest.raises(EstimatorError) as err:
                refuse(f"ctok:{bad}")
            assert (err.value.what, err.value.hint) == (
                f"ctok has no Claude tokenizer {bad!r}",
                "e.g. ctok:3.0 or ctok:4.7",
            )


@pytest.mark.skipif(HAS_CTOK, reason="ctok is installed here")
def test_without_ctok_the_estimator_says_what_to_install() -> None:
    reason = why_unusable("ctok:3.0")
    if sys.version_info < (3, 12):
        running = f"{sys.version_info[0]}.{sys.version_info[1]}"
        assert reason == f"needs Python 3.12+ for ctok (this is {running}), then pip install 'calib[claude]'"
    else:
        assert reason == "needs ctok: pip install 'calib[claude]'"
    with pytest.raises(EstimatorError) as err:
        get_estimator("ctok:3.0")
    assert err.value.what == "ctok:3.0 cannot load here" and err.value.hint == reason
    listed = {e.name: e for e in list_estimators()}
    assert "ctok:" in listed and not listed["ctok:"].available


@needs_ctok
def test_content_is_counted_without_the_message_frame() -> None:
    import ctok as package

    for version in ("3.0", "4.7"):
        estimator = get_estimator(f"ctok:{version}")
        frame = package.token_count("x", version) - estimator.count("x")
        assert frame >= 4  # the single-message frame ctok counts in (7 tokens for 3.0, 11 for 4.7)
        texts = ["hello world", "def f(x):\n    return x + 1\n", "日本語のテキスト", " leading space"]
        for text in texts:
            assert estimator.count(text) == package.token_count(text, version) - frame
        assert estimator.count("") == 0
        assert estimator.count_many(texts) == [estimator.count(t) for t in texts]


@needs_ctok
def test_each_family_is_its_own_estimator_in_the_count_cache() -> None:
    # Opus 4.7's tokenizer splits text differently: its counts must never be served as 3.0's
    assert cache_version("ctok:3.0") != cache_version("ctok:4.7")
    assert get_estimator("ctok:3.0").version == cache_version("ctok:3.0")
    text = "Refactor the session summarizer so that it reads the configured chats directory."
    assert get_estimator("ctok:4.7").count(text) > get_estimator("ctok:3.0").count(text)
