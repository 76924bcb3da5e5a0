"""What the importers share: building a database session's records while leaving out damaged messages."""

from __future__ import annotations

from pathlib import Path

from calib.core.errors import InputWarning
from calib.importers.common import build_leaving_out, damaged_row

DB = Path("/data/agent.db")


def _build(items: list[object]) -> list[int]:
    """Doubles every item; a string cannot be doubled into an int, a None breaks the whole session."""
    if None in items and len(items) > 1:
        raise KeyError("a message before it is gone")
    return [int(item or 0) * 2 for item in items]  # type: ignore[call-overload]


def _leave_out(items: list[object], **extra: object) -> list[object]:
    return build_leaving_out(
        _build,
        items,
        damaged=lambda item, what: damaged_row(DB, "m", str(item), what, "it was left out"),
        path=DB,
        session="s1",
        **extra,  # type: ignore[arg-type]
    )


def test_sound_messages_are_built_once_as_they_are() -> None:
    assert _leave_out([1, 2, 3]) == [[2, 4, 6]]


def test_a_message_that_fails_alone_is_left_out_with_a_warning() -> None:
    out = _leave_out([1, "x", 3])
    assert out[1:] == [[2, 6]]
    (warning,) = out[:1]
    assert isinstance(warning, InputWarning) and warning.path == str(DB) and warning.line is None
    assert str(warning) == (
        "row x of table `m` is a message calib cannot read (ValueError: invalid literal for int() with "
        f"base 10: 'x'); it was left out ({DB})"
    )


def test_a_stand_in_keeps_the_place_of_a_message_left_out() -> None:
    assert _leave_out([1, "x", 3], stand_in=lambda item: 0)[1:] == [[2, 0, 6]]


def test_damage_between_messages_costs_the_session_with_one_warning() -> None:
    (warning,) = _leave_out([1, None, 3])
    assert isinstance(warning, InputWarning)
    assert str(warning) == (
        "session s1 cannot be read (KeyError: 'a message before it is gone'); left out, the rest of the "
        f"database was imported ({DB})"
    )
