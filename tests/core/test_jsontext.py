"""`json_text`: orjson's compact JSON, and the standard library's text for what orjson refuses, at any depth."""

from __future__ import annotations

import json

import orjson
import pytest

from calib.core.jsontext import json_text


def _stdlib(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_plain_values_are_what_orjson_writes() -> None:
    value = {"a": [1, 2.5, None, True, 'é\n"'], "b": {}, "c": []}
    assert json_text(value) == orjson.dumps(value).decode() == _stdlib(value)


@pytest.mark.parametrize(
    "value",
    [
        {"big": [2**64, -(2**63) - 1, 2**70]},
        {2: "x", None: 2, True: 3, 1.5: 4},
        {"k": "[" * 3},
    ],
)
def test_values_orjson_refuses_are_written_as_the_standard_library_writes_them(value: object) -> None:
    assert json_text(value) == _stdlib(value)


def test_values_nested_deeper_than_any_recursive_writer_goes() -> None:
    # orjson parses up to 1,024 deep, writes up to 255; the standard library recurses out near 1,000.
    text = "[" * 1020 + '{"a":[1,"b"]}' + "]" * 1020
    assert json_text(orjson.loads(text)) == text
    deep: object = "end"
    for _ in range(100_000):
        deep = {"k": [deep]}
    assert json_text(deep).startswith('{"k":[{"k":[')


def test_what_json_cannot_hold_is_still_a_type_error() -> None:
    with pytest.raises(TypeError):
        json_text({"deep": json.loads("[" * 300 + "]" * 300), "bad": object()})
