"""calib/runtime.py against the conformance vectors the TypeScript runtime is held to (tests/node).

The vectors are written by `calib.synth.runtime_vectors` from runtime.py itself, so the file must be
fresh (else the TypeScript side is checked against yesterday's Python), and its base counts are
checked here against calib's own estimators, an implementation runtime.py does not share.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

import calib.runtime as runtime
from calib.estimators import get_estimator
from calib.estimators.charclass import class_counts
from calib.synth import runtime_vectors

VECTORS = Path(__file__).parent / "conformance" / "runtime_vectors.json"


@pytest.fixture(scope="module")
def vectors() -> dict[str, Any]:
    return json.loads(VECTORS.read_text(encoding="ascii"))


@pytest.fixture(scope="module")
def texts(vectors: dict[str, Any]) -> dict[str, str]:
    return {name: runtime_vectors.expand(spec) for name, spec in vectors["texts"].items()}


@pytest.fixture(scope="module")
def cals(vectors: dict[str, Any]) -> dict[str, runtime.Calibration]:
    return {name: runtime.Calibration(doc) for name, doc in vectors["configs"].items()}


def test_the_committed_vectors_are_what_the_generator_writes_today() -> None:
    fresh = runtime_vectors.dumps(runtime_vectors.build())
    assert VECTORS.read_text(encoding="ascii") == fresh, (
        "tests/conformance/runtime_vectors.json is stale: run `make vectors` and commit it"
    )


def test_the_vectors_cover_every_class_of_text(texts: dict[str, str]) -> None:
    counts = [runtime.class_counts(t) for t in texts.values()]
    for index, name in enumerate(runtime.CHAR_CLASSES):
        assert sum(c[index] for c in counts) > 100, name
    assert "" in texts.values()
    assert any(len(t.encode("utf-16-le", "surrogatepass")) // 2 > 100_000 for t in texts.values())
    assert any(ord(c) > 0xFFFF for t in texts.values() for c in t)  # astral characters
    lone = [t for t in texts.values() if any(0xD800 <= ord(c) <= 0xDFFF for c in t)]
    assert len(lone) >= 10
    # no high surrogate followed by a low one: one code point in UTF-16, two in a Python str
    for text in lone:
        for a, b in itertools.pairwise(text):
            assert not ("\ud800" <= a <= "\udbff" and "\udc00" <= b <= "\udfff"), text


def test_base_counts_equal_calibs_estimators(vectors: dict[str, Any], texts: dict[str, str]) -> None:
    names = [v["text"] for v in vectors["bases"]]
    batch = [texts[n] for n in names]
    assert [v["chars4"] for v in vectors["bases"]] == get_estimator("chars4").count_many(batch)
    assert [v["cjk"] for v in vectors["bases"]] == get_estimator("cjk").count_many(batch)
    frame = class_counts(batch)
    assert [v["class_counts"] for v in vectors["bases"]] == [list(row) for row in frame.rows()]


def test_runtime_py_gives_every_integer(
    vectors: dict[str, Any], texts: dict[str, str], cals: dict[str, runtime.Calibration]
) -> None:
    def parts(items: list[dict[str, Any]]) -> list[runtime.Part]:
        return [runtime_vectors.as_part(p, texts.__getitem__) for p in items]

    for v in vectors["bases"]:
        text = texts[v["text"]]
        assert (runtime.chars4(text), runtime.cjk(text)) == (v["chars4"], v["cjk"])
        assert list(runtime.class_counts(text)) == v["class_counts"]
    for v in vectors["names"]:
        assert runtime.normalise_provider(v["provider"]) == v["provider_key"]
        assert runtime.normalise_model(v["model"]) == v["model_key"]
    for v in vectors["lookups"]:
        cal = cals[v["config"]]
        assert cal.params(v["provider"], v["model"]).level == v["level"]
        if v["strict_error"] is None:
            cal.params(v["provider"], v["model"], strict=True)
        else:
            with pytest.raises(runtime.UnknownGroupError) as strict:
                cal.params(v["provider"], v["model"], strict=True)
            assert str(strict.value) == v["strict_error"]
    for v in vectors["counts"]:
        got = cals[v["config"]].count(texts[v["text"]], v["provider"], v["model"], v["kind"])
        assert got == v["expect"], v
    for v in vectors["parts"]:
        got = cals[v["config"]].count_parts(parts(v["parts"]), v["provider"], v["model"], v["messages"])
        assert got == v["expect"], v
    for v in vectors["predictions"]:
        got = cals[v["config"]].predict_context(
            v["last_ctx"],
            v["last_carry"],
            parts(v["new_parts"]),
            v["provider"],
            v["model"],
            v["messages"],
            removed=parts(v["removed"]),
            placeholders=parts(v["placeholders"]),
            removed_tokens=v["removed_tokens"],
        )
        assert got == v["expect"], v
    for v in vectors["estimates"]:
        got = cals[v["config"]].estimate_context(
            parts(v["parts"]), v["provider"], v["model"], v["messages"], v["tool"]
        )
        assert got == v["expect"], v
    for v in vectors["errors"]:
        with pytest.raises(runtime.CalibrationError) as caught:
            runtime.validate(v["config"])
        assert str(caught.value) == v["message"], v["case"]
    for v in vectors["documents"]:
        if v["message"] is None:
            runtime.loads(v["text"])
            continue
        with pytest.raises(runtime.CalibrationError) as refused:
            runtime.loads(v["text"])
        assert str(refused.value) == v["message"], v["case"]


def test_the_vectors_reach_every_level_and_both_signs_of_change(vectors: dict[str, Any]) -> None:
    levels = {v["level"] for v in vectors["lookups"]}
    assert "default" in levels
    assert any("/" in level for level in levels)
    assert any(level != "default" and "/" not in level for level in levels)
    assert any(v["strict_error"] for v in vectors["lookups"])
    assert any(v["strict_error"] is None for v in vectors["lookups"])
    # a prediction whose removals outweigh the new parts, and one clamped at zero
    assert any(v["expect"] < v["last_ctx"] + v["last_carry"] for v in vectors["predictions"])
    assert any(v["expect"] == 0 for v in vectors["predictions"])


def test_the_vectors_reach_the_bounds(vectors: dict[str, Any]) -> None:
    # every parameter at the bound, and the largest counts passed in: estimates far beyond 2**53, finite
    at_bounds = {name for name in vectors["configs"] if name.endswith("_at_bounds")}
    assert len(at_bounds) == len(runtime.RUNTIME_BASES)
    for section in ("counts", "parts", "predictions", "estimates"):
        assert any(v["config"] in at_bounds and v["expect"] > 1e200 for v in vectors[section]), section
    assert any(v.get("messages") == runtime.MAX_COUNT for v in vectors["parts"])
    # refused beyond the bounds, with messages that name the field and show the value cut short
    messages = [v["message"] for v in vectors["errors"]]
    assert any(m.endswith("expected a number <= 1e+100, got 1e+308") for m in messages)
    assert any(m.endswith("expected a number >= -1e+100, got -1e+300") for m in messages)
    assert any(m.endswith("...") and len(m.split("got ", 1)[1]) == 60 for m in messages)
    documents = vectors["documents"]
    assert any(v["message"] is None for v in documents)
    assert sum("JSON nested deeper than 64 levels" in (v["message"] or "") for v in documents) >= 3
    assert any((v["message"] or "").endswith("got Infinity") for v in documents)
