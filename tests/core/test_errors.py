"""CalibError renders as one line: what went wrong, where (path:line), what to do."""

from __future__ import annotations

import pytest

from calib.core.errors import (
    CalibError,
    ConfigError,
    EstimatorError,
    InputError,
    NotASessionError,
    StoreError,
    UsageError,
)


def test_full_error_renders_what_where_and_hint_on_one_line() -> None:
    err = InputError("not valid JSON", path="a/s.jsonl", line=12, hint="restore the file")
    assert str(err) == "not valid JSON (a/s.jsonl:12); restore the file"
    assert err.where == "a/s.jsonl:12"
    assert "\n" not in str(err)


def test_parts_left_out_are_left_out_of_the_line() -> None:
    assert str(CalibError("boom")) == "boom"
    assert str(CalibError("boom", path="db.duckdb")) == "boom (db.duckdb)"
    assert str(CalibError("boom", hint="retry")) == "boom; retry"
    # A line without a path names no place: it would point nowhere.
    assert str(CalibError("boom", line=3)) == "boom"
    assert CalibError("boom", line=3).where is None
    assert CalibError("boom", path="f").where == "f"


def test_to_dict_is_the_ingest_errors_entry() -> None:
    err = InputError("truncated", path="x.json", line=None, hint="restore it")
    assert err.to_dict() == {"path": "x.json", "line": None, "message": "truncated (x.json); restore it"}
    assert CalibError("e", path="p", line=4).to_dict() == {"path": "p", "line": 4, "message": "e (p:4)"}


@pytest.mark.parametrize(
    "cls", [InputError, NotASessionError, StoreError, EstimatorError, ConfigError, UsageError]
)
def test_every_error_is_a_calib_error_keeping_its_fields(cls: type[CalibError]) -> None:
    err = cls("what", path="p", line=1, hint="h")
    assert isinstance(err, CalibError)
    assert (err.what, err.path, err.line, err.hint) == ("what", "p", 1, "h")
    assert err.args == ("what",)
    with pytest.raises(CalibError, match=r"^what \(p:1\); h$"):
        raise err


def test_not_a_session_is_an_input_error() -> None:
    assert issubclass(NotASessionError, InputError)
    assert not issubclass(UsageError, InputError)
