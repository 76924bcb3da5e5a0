"""The store's columns come from the records: the migrated tables hold exactly the records' fields."""

from __future__ import annotations

from pathlib import Path

from calib.core.records import COLUMNS
from calib.store.columns import table_schema
from calib.store.store import Store
from calib.store.writes import DERIVED_COLUMNS

# DuckDB's name for each column kind (a dict field is stored as JSON text).
_DUCKDB_TYPES = {
    "string": "VARCHAR",
    "int32": "INTEGER",
    "int64": "BIGINT",
    "bool": "BOOLEAN",
    "timestamp": "TIMESTAMP",
    "json": "JSON",
}


def test_every_record_field_is_a_column_of_its_table_with_its_type(tmp_path: Path) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        for table, columns in COLUMNS.items():
            rows = store.con.execute(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ?",
                [table],
            ).fetchall()
            stored = dict(rows)
            expected = {c.name: _DUCKDB_TYPES[c.kind] for c in columns}
            # and the columns the store derives as it writes (the text hash is a UBIGINT)
            expected |= dict.fromkeys(DERIVED_COLUMNS.get(table, {}), "UBIGINT")
            assert stored == expected, table


def test_arrow_schema_follows_the_record_fields_in_order() -> None:
    schema = table_schema("calls")
    assert schema.names == [c.name for c in COLUMNS["calls"]]
    assert schema.names[:3] == ["call_uid", "session_uid", "seq"]
    assert str(schema.field("seq").type) == "int32" and str(schema.field("ctx").type) == "int64"
    assert str(schema.field("usage_raw").type) == "string"  # JSON travels as its text
    assert str(table_schema("parts").field("pruned_at").type) == "timestamp[us]"
