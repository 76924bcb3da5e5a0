"""charclass: class counts, the weighted estimate, weights from JSON, and the default fit."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from calib.analysis.bench import CONTENT_TYPES, build_corpus
from calib.core.errors import EstimatorError
from calib.estimators import get_estimator
from calib.estimators.charclass import CLASSES, CharClassEstimator, class_counts, fit_weights


def test_class_counts_partition_each_text() -> None:
    texts = ["Hello, World 42\n", "中文、テスト 한국어 é😀", "", "\ud800x", "ｆｕｌｌ"]
    df = class_counts(texts)
    assert df.columns == list(CLASSES)
    assert df.schema == dict.fromkeys(CLASSES, pl.Int64)
    rows = df.rows(named=True)
    assert rows[0] == {"letters": 10, "digits": 2, "whitespace": 3, "punctuation": 1, "cjk": 0, "other": 0}
    # 中文、 テスト 한국어 are CJK (9), the two spaces whitespace, é and 😀 other
    assert rows[1] == {"letters": 0, "digits": 0, "whitespace": 2, "punctuation": 0, "cjk": 9, "other": 2}
    assert rows[2] == dict.fromkeys(CLASSES, 0)
    assert rows[3] == {"letters": 1, "digits": 0, "whitespace": 0, "punctuation": 0, "cjk": 1, "other": 0}
    assert rows[4]["other"] == 4  # fullwidth forms are not in the CJK range
    assert df.sum_horizontal().to_list() == [len(t) for t in texts]
    assert class_counts([]).height == 0


def test_weighted_sum_rounds_half_up_and_keeps_empty_at_zero() -> None:
    est = CharClassEstimator({"letters": 0.25, "digits": 0.5}, intercept=0.5, name="t")
    assert est.count("") == 0  # no intercept for an empty text
    assert est.count("ab") == 1  # 0.5 + 0.5
    assert est.count("a") == 1  # 0.75 -> 1
    assert est.count("abcd1") == 2  # 0.5 + 1.0 + 0.5 = 2.0
    assert est.count("abcd") == 2  # 1.5 -> 2 (half up)
    assert est.count("!!!!") == 1  # punctuation weighs 0 here: 0.5 rounds up to 1
    negative = CharClassEstimator({"letters": -1.0})
    assert negative.count("abc") == 0
    assert est.count_many(["ab", "", "abcd1"]) == [1, 0, 2]


def test_unknown_class_is_an_error() -> None:
    with pytest.raises(EstimatorError, match="unknown character class 'emoji'"):
        CharClassEstimator({"emoji": 1.0})


def test_weights_from_a_json_file(tmp_path: Path) -> None:
    nested = tmp_path / "nested.json"
    nested.write_text(json.dumps({"weights": {"letters": 0.5, "cjk": 2.0}, "intercept": 1}))
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"letters": 0.5, "cjk": 2.0}))
    assert get_estimator(f"charclass:{nested}").count("ab中") == 1 + 1 + 2
    assert get_estimator(f"charclass:{flat}").count("ab中") == 3
    assert get_estimator(f"charclass:{flat}").name == f"charclass:{flat}"


def test_bad_weight_files_say_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(EstimatorError, match="not found"):
        get_estimator(f"charclass:{tmp_path / 'missing.json'}")
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "letters": 0.2,\n  oops\n}')
    with pytest.raises(EstimatorError) as info:
        get_estimator(f"charclass:{broken}")
    assert f"{broken}:3" in str(info.value)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"letters": "lots"}))
    with pytest.raises(EstimatorError, match="map class names to numbers"):
        get_estimator(f"charclass:{wrong}")
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({"vowels": 0.3}))
    with pytest.raises(EstimatorError, match="unknown character class"):
        get_estimator(f"charclass:{unknown}")


def test_fit_recovers_known_weights() -> None:
    truth = {
        "letters": 0.25,
        "digits": 0.75,
        "whitespace": 0.125,
        "punctuation": 0.5,
        "cjk": 1.0,
        "other": 2.0,
    }
    texts = build_corpus(per_type_bytes=20_000).all()
    counts = class_counts(texts).rows()
    targets = [3 + sum(w * c for w, c in zip(truth.values(), row, strict=True)) for row in counts]
    weights, intercept = fit_weights(texts, targets)  # type: ignore[arg-type]
    assert weights == pytest.approx(truth, abs=1e-6)
    assert intercept == pytest.approx(3, abs=1e-4)


def test_default_weights_track_o200k_per_content_type() -> None:
    # The defaults were fitted to o200k_base on the full bench corpus; on the quick corpus each
    # content type's total must stay within 5% of the real count.
    corpus = build_corpus(quick=True)
    charclass = get_estimator("charclass")
    o200k = get_estimator("tiktoken:o200k_base")
    for kind in CONTENT_TYPES:
        docs = corpus.docs[kind]
        ratio = sum(charclass.count_many(docs)) / sum(o200k.count_many(docs))
        assert 0.95 < ratio < 1.05, (kind, ratio)
